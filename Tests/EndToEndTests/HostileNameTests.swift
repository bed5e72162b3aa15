import Foundation
import XCTest

/// Names a plugin chose (its files' names) reach lcov's tracefile and the terminal as
/// data, never as records of their own or as escape sequences.
final class HostileNameTests: ScratchTestCase {
    /// A plugin with a clean `init.lua` and a spec that loads it.
    private func writeGauge() throws {
        try write("plugins/gauge/init.lua", """
            local mf = require "moonflow"
            return mf.feature {
              name = "gauge", initial = { n = 0 },
              actions = { tick = {} }, mutations = { ticked = {} },
              handle = function() return { type = "ticked" } end,
              reduce = function(state) state.n = state.n + 1 return state end,
            }
            """)
        try write("plugins/gauge/spec/gauge_spec.lua", """
            local T = require "moonflow.test"
            it("ticks", function()
              local store = T.store("gauge")
              store:send({ type = "tick" }, function(s) s.n = 1 end)
            end)
            """)
    }

    /// A file whose name holds line breaks would write lcov records of its own (genhtml
    /// would then publish `.env`): it is left out of the tracefile, and the run says so.
    func testAFileNameWithLineBreaksWritesNoLcovRecordOfItsOwn() throws {
        try writeGauge()
        try write("plugins/gauge/x\nend_of_record\nTN:\nSF:.env\nDA:1,1\nLF:1\nLH:1\nend_of_record\nTN:\nSF:y.lua", "return 1\n")
        let result = try Moonflow.run(["test", "--coverage"], in: scratch)
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        let lcov = try String(contentsOf: scratch.appendingPathComponent("coverage/lcov.info"), encoding: .utf8)
        let sources = lcov.split(separator: "\n").filter { $0.hasPrefix("SF:") }
        XCTAssertEqual(sources, ["SF:plugins/gauge/init.lua"], lcov)
        XCTAssertEqual(lcov.components(separatedBy: "end_of_record\n").count - 1, 1, lcov)
        XCTAssertTrue(result.stdout.contains(#"left out of coverage/lcov.info: plugins/gauge/x\nend_of_record\nTN:\nSF:.env"#), result.stdout)
    }
}
