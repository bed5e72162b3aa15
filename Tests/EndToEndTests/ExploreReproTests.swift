import Foundation
import XCTest

/// The spec a failing exploration prints reproduces it when pasted: it fails at its last line, the
/// failing check, not at a `receive` before it.
final class ExploreReproTests: ScratchTestCase {
    /// The plugins of this repository that keep a known race for the explorer to find, with the
    /// seed that finds it and the check it breaks (their spec/explore_spec.lua describes each).
    static let knownRaces: [(plugin: String, seed: Int, check: String)] = [
        ("colors", 1, "invariant 'noColorTwice' does not hold")
    ]

    /// The spec lines of the shrunk run the failure printed, from `it(` to `end)`.
    private func printedSpec(_ stdout: String) throws -> [String] {
        let lines = stdout.components(separatedBy: "\n").map { $0.hasPrefix("  ") ? String($0.dropFirst(2)) : $0 }
        let start = try XCTUnwrap(lines.firstIndex { $0.hasPrefix("it(") }, stdout)
        let end = try XCTUnwrap(lines[start...].firstIndex { $0 == "end)" }, stdout)
        return Array(lines[start...end])
    }

    /// Explores `plugin` (already in the scratch folder), pastes the spec it prints into a spec
    /// file and runs it: it must fail at the line marked `-- fails:`, with `check`.
    private func assertPastedSpecFailsAtItsCheck(
        _ plugin: String, seed: Int, check: String, file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let found = try Moonflow.run(["test", "--explore", "plugins/\(plugin)", "--seed", "\(seed)"], in: scratch)
        XCTAssertEqual(found.status, 1, found.stdout, file: file, line: line)
        XCTAssertTrue(found.stdout.contains(check), found.stdout, file: file, line: line)
        let spec = try printedSpec(found.stdout)
        let failing = try XCTUnwrap(spec.firstIndex { $0.contains("-- fails: ") }, spec.joined(separator: "\n"))
        try write(
            "plugins/\(plugin)/spec/repro_spec.lua",
            (["local T = require \"moonflow.test\""] + spec).joined(separator: "\n") + "\n")
        let pasted = try Moonflow.run(["test", "plugins/\(plugin)/spec/repro_spec.lua"], in: scratch)
        XCTAssertEqual(pasted.status, 1, pasted.stdout, file: file, line: line)
        // Line 1 is the require: the spec's line i (from 0) is the file's line i + 2.
        XCTAssertTrue(
            pasted.stdout.contains("repro_spec.lua:\(failing + 2): \(check)"),
            "expected a failure at line \(failing + 2):\n" + spec.joined(separator: "\n") + "\n" + pasted.stdout,
            file: file, line: line)
    }

    func testEachKnownRaceOfTheExamplesReproducesWhereItFails() throws {
        for race in Self.knownRaces {
            let folder = Moonflow.root.appendingPathComponent("plugins/\(race.plugin)")
            for name in try FileManager.default.contentsOfDirectory(atPath: folder.path) where name.hasSuffix(".lua") {
                try write(
                    "plugins/\(race.plugin)/\(name)",
                    try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8))
            }
            try assertPastedSpecFailsAtItsCheck(race.plugin, seed: race.seed, check: race.check)
        }
    }

    func testAPayloadThatPrintsInexactlyDoesNotStopThePastedSpecBeforeItsCheck() throws {
        // The timer's answer carries 1/3, which 14 digits do not give back: a `receive` of the
        // printed payload would match nothing, and the pasted spec would fail there.
        try write(
            "plugins/meter/init.lua",
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "meter",
              initial = { reading = 0, committed = 0 },
              state = { reading = "number", committed = "integer" },
              actions = { measure = {}, commit = {} },
              mutations = { measured = { v = "number" }, committed = {} },
              invariants = { neverCommitted = function(s) return s.committed == 0 end },
              handle = function(action, state)
                if action.type == "measure" then return mf.timer(10, { type = "measured", v = 1 / 3 }) end
                if state.reading > 0 then return { type = "committed" } end
              end,
              reduce = function(s, m)
                if m.type == "measured" then s.reading = m.v else s.committed = s.committed + 1 end
                return s
              end,
            }
            """)
        try assertPastedSpecFailsAtItsCheck("meter", seed: 1, check: "invariant 'neverCommitted' does not hold")
    }
}
