import Foundation
import XCTest

/// The second round of hostile scripts and input: huge times, sandbox escapes,
/// code that hooks cannot reach, views kept or written raw, infinity.
final class HostileRoundTwoTests: ScratchTestCase {
    private func events(_ stdout: String) -> [[String: Any]] {
        stdout.split(separator: "\n").compactMap { line in
            try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        }
    }

    private func errors(_ stdout: String) -> [String] {
        events(stdout).filter { $0["event"] as? String == "error" }.compactMap { $0["message"] as? String }
    }

    private func lastState(_ stdout: String) -> [String: Any]? {
        events(stdout).last { $0["event"] as? String == "state" }?["state"] as? [String: Any]
    }

    /// Runs plugins/NAME on the virtual clock with `lines` as input, in jsonl.
    private func run(_ name: String, _ lines: [String], _ extra: [String] = []) throws -> Moonflow.Result {
        try write("in.jsonl", lines.joined(separator: "\n") + "\n")
        return try Moonflow.run(["run", "plugins/\(name)", "--actions", "in.jsonl", "--format", "jsonl", "--clock", "virtual"] + extra, in: scratch)
    }

    // MARK: - Huge numbers from outside

    func testHugeTimesAndDelaysDoNotOverflowTheClock() throws {
        try write("plugins/late/init.lua", """
            local mf = require "moonflow"
            return mf.feature {
              name = "late", initial = { n = 0 }, actions = { wait = { ms = "integer" }, bump = {} }, mutations = { bump = {} },
              handle = function(a)
                if a.type == "bump" then return { type = "bump" } end
                if a.ms < 0 then return mf.interval(-a.ms):map(function() return { type = "bump" } end) end
                return mf.timer(a.ms, { type = "bump" })
              end,
              reduce = function(s) s.n = s.n + 1 return s end,
            }
            """)
        let result = try run("late", [
            #"{"send":{"type":"wait","ms":9223372036854775807},"at":5}"#,
            #"{"at":9223372036854775800,"send":{"type":"wait","ms":100}}"#,
            #"{"at":9223372036854775806,"send":{"type":"wait","ms":-3}}"#,
            #"{"at":9223372036854775807,"send":{"type":"bump"}}"#,
        ])
        XCTAssertFalse(result.stderr.contains("overflow"), result.stderr)
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(lastState(result.stdout)?["n"] as? Int, 4, "the bump, the two timers due at the end of time, one tick: \(result.stdout)")

        // A recording whose times are at the end of Int replays without a trap.
        try write("rec.jsonl", """
            {"record":"moonflow-session","format":1,"feature":"late","version":1,"path":"plugins/late","clock":"virtual"}
            {"input":{"type":"wait","ms":5},"t":9223372036854775807}
            """)
        let replay = try Moonflow.run(["replay", "rec.jsonl"], in: scratch)
        XCTAssertFalse(replay.stderr.contains("overflow"), replay.stderr)
        XCTAssertTrue([0, 1].contains(replay.status), "compared, not crashed: \(replay.status) \(replay.stderr)")
    }
}
