import Foundation
import XCTest

/// The third round of hostile scripts and input, through the built binary as users run it.
final class HostileRoundThreeTests: ScratchTestCase {
    private func errors(_ stdout: String) -> [String] {
        stdout.split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]).flatMap {
                $0["event"] as? String == "error" ? $0["message"] as? String : nil
            }
        }
    }

    /// `moonflow run` on the real clock (the default) runs Lua on a libdispatch worker,
    /// which blocked the watchdog's signal: a `while true do end` was declared stuck at
    /// limit + 2 s and spun on at 100% CPU. Now it stops at its limit and the run goes on.
    func testALuaLoopStopsAtItsLimitOnTheRealClock() throws {
        try write("plugins/spin/init.lua", """
            local mf = require "moonflow"
            return mf.feature {
              name = "spin", initial = { n = 0 }, actions = { spin = {}, bump = {} }, mutations = { bump = {} },
              handle = function(a) if a.type == "spin" then while true do end end return { type = "bump" } end,
              reduce = function(s) s.n = s.n + 1 return s end,
            }
            """)
        for extra in [[], ["--sandbox"]] {
            let result = try Moonflow.run(["run", "plugins/spin", "--format", "jsonl", "--actions", "-", "--time-limit", "200"] + extra,
                                          in: scratch, input: "{\"type\":\"spin\"}\n{\"type\":\"spin\"}\n{\"type\":\"bump\"}\n")
            let errors = errors(result.stdout)
            XCTAssertEqual(errors.count, 2, "\(extra): \(result.stdout)")
            for message in errors {
                XCTAssertTrue(message.hasPrefix("time limit of 200 ms exceeded"), "\(extra): \(message)")
            }
            XCTAssertFalse(result.stdout.contains("cannot be interrupted"), "\(extra): \(result.stdout)")
            XCTAssertTrue(result.stdout.contains("\"state\":{\"n\":1}"), "the run goes on in the same host (\(extra)): \(result.stdout)")
        }
    }
}
