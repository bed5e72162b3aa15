import Foundation
import XCTest

/// Guided exploration: `T.explore`'s `guided` option (true by default; false draws every run
/// uniformly), on the built binary.
final class ExploreGuidedTests: ScratchTestCase {
    func testGuidedIsABooleanOptionThatDefaultsToTrue() throws {
        try write("plugins/player/init.lua", ExploreTests.player)
        try write(
            "plugins/player/spec/guided_spec.lua",
            """
            local T = require "moonflow.test"
            it("takes guided = false", function()
              local report = T.explore("player", { guided = false, runs = 3, length = 2, seed = 1, quiet = true, raise = false })
              assert.equal(false, report.guided)
            end)
            it("is guided by default", function()
              local report = T.explore("player", { runs = 3, length = 2, seed = 1, quiet = true, raise = false })
              assert.equal(true, report.guided)
            end)
            it("refuses a guided that is not a boolean", function()
              T.explore("player", { guided = "yes", runs = 1, length = 1, seed = 1 })
            end)
            """)
        let result = try Moonflow.run(["test", "plugins/player/spec"], in: scratch)
        XCTAssertEqual(result.status, 1, result.stdout + result.stderr)
        XCTAssertTrue(result.stdout.contains("✓ takes guided = false"), result.stdout)
        XCTAssertTrue(result.stdout.contains("✓ is guided by default"), result.stdout)
        XCTAssertTrue(result.stdout.contains("✗ refuses a guided that is not a boolean: "), result.stdout)
        XCTAssertTrue(result.stdout.contains("T.explore: opts.guided must be a boolean"), result.stdout)
        XCTAssertTrue(result.stdout.contains("(got string)"), result.stdout)
        XCTAssertTrue(result.stdout.contains("2 passed, 1 failed"), result.stdout)
    }
}
