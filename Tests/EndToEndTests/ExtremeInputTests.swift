import Foundation
import XCTest

/// Input at the edges of what numbers hold: huge times and delays, a negative time.
final class ExtremeInputTests: ScratchTestCase {
    func testHugeTimesAndDelaysDoNotOverflowTheClock() throws {
        try write(
            "plugins/late/init.lua",
            """
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
        let result = try runJSONL(
            "late",
            [
                #"{"send":{"type":"wait","ms":9223372036854775807},"at":5}"#,
                #"{"at":9223372036854775800,"send":{"type":"wait","ms":100}}"#,
                #"{"at":9223372036854775806,"send":{"type":"wait","ms":-3}}"#,
                #"{"at":9223372036854775807,"send":{"type":"bump"}}"#,
            ])
        XCTAssertFalse(result.stderr.contains("overflow"), result.stderr)
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(
            jsonlLastState(result.stdout)?["n"] as? Int, 4,
            "the bump, the two timers due at the end of time, one tick: \(result.stdout)")

        // A recording whose times are at the end of Int replays without a trap.
        try write(
            "rec.jsonl",
            """
            {"record":"moonflow-session","format":1,"feature":"late","version":1,"path":"plugins/late","clock":"virtual"}
            {"input":{"type":"wait","ms":5},"t":9223372036854775807}
            """)
        let replay = try Moonflow.run(["replay", "rec.jsonl"], in: scratch)
        XCTAssertFalse(replay.stderr.contains("overflow"), replay.stderr)
        XCTAssertTrue([0, 1].contains(replay.status), "compared, not crashed: \(replay.status) \(replay.stderr)")
    }

    func testARecordedInputWithANegativeTimeIsRefused() throws {
        try write(
            "plugins/late/init.lua",
            "return require('moonflow').feature { name = 'late', initial = {}, actions = { go = {} }, mutations = {}, handle = function() end, reduce = function(s) return s end }\n"
        )
        try write(
            "rec.jsonl",
            """
            {"record":"moonflow-session","format":1,"feature":"late","version":1,"path":"plugins/late","clock":"virtual"}
            {"input":{"type":"go"},"t":-5}
            """)
        let replay = try Moonflow.run(["replay", "rec.jsonl"], in: scratch)
        XCTAssertEqual(replay.status, 2)
        XCTAssertTrue(
            replay.stderr.contains("rec.jsonl:2: an input line needs its time \"t\" in ms (an integer, 0 or more)"),
            replay.stderr)
    }
}
