import Foundation
import XCTest

/// `mf.compose`'s `route`: nil drops an action, several pairs send it to
/// several children in order; and the real clock reduces what an action
/// did at once in the order the virtual clock does.
final class ComposeRouteTests: ScratchTestCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        try write(
            "plugins/list/init.lua",
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "list", initial = { open = false, items = {} },
              actions = { open = {}, add = { text = "string" } },
              mutations = { opened = {}, added = { text = "string" } },
              handle = function(a) if a.type == "open" then return mf.just({ type = "opened" }) end return mf.just({ type = "added", text = a.text }) end,
              reduce = function(s, m) if m.type == "opened" then s.open = true else s.items[#s.items + 1] = m.text end return s end,
            }
            """)
        try write(
            "plugins/composer/init.lua",
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "composer", initial = { text = "" },
              actions = { type = { text = "string" }, clear = {} },
              mutations = { typed = { text = "string" }, cleared = {} },
              handle = function(a) if a.type == "clear" then return { type = "cleared" } end return mf.just({ type = "typed", text = a.text }):map(function(x) return x end) end,
              reduce = function(s, m) if m.type == "cleared" then s.text = "" else s.text = m.text end return s end,
            }
            """)
        try write(
            "plugins/chat/init.lua",
            """
            local mf = require "moonflow"
            return mf.compose {
              name = "chat",
              children = { list = "list", composer = "composer" },
              route = function(action, state)
                if action.type == "open" then return "list", action end
                if action.type == "type" then return "composer", action end
                if action.type == "submit" then return "list", { type = "add", text = state.composer.text }, "composer", { type = "clear" } end
                return nil
              end,
              combine = function(s) return { list = s.list, composer = s.composer } end,
            }
            """)
        try write(
            "in.jsonl",
            #"""
            {"type":"open"}
            {"type":"type","text":"hi"}
            {"type":"submit"}
            {"type":"noise"}
            """# + "\n")
    }

    private func run(_ clock: String) throws -> [String] {
        let result = try Moonflow.run(
            ["run", "plugins/chat", "--format", "jsonl", "--clock", clock, "--actions", "in.jsonl"], in: scratch)
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        return result.stdout.split(separator: "\n").map {
            $0.replacingOccurrences(of: #""t":\d+"#, with: "\"t\":T", options: .regularExpression)
        }
    }

    func testNilDropsTheActionAndPairsReachEachChildInOrder() throws {
        let lines = try run("virtual")
        let submit = try XCTUnwrap(lines.firstIndex(of: #"{"event":"action","t":T,"action":{"type":"submit"}}"#))
        // Both children got their action (the list's answer is a stream, so it comes second).
        let after = lines[(submit + 1)...].filter { $0.contains("\"event\":\"mutation\"") }.map {
            $0.replacingOccurrences(of: #""seq":\d+,"#, with: "", options: .regularExpression)
        }
        XCTAssertEqual(
            Set(after),
            [
                #"{"event":"mutation","t":T,"from":"list","mutation":{"text":"hi","type":"added"}}"#,
                #"{"event":"mutation","t":T,"from":"composer","mutation":{"type":"cleared"}}"#,
            ])
        XCTAssertEqual(
            lines.last,
            #"{"event":"log","t":T,"message":"chat: route dropped action 'noise' (it returned nil)","where":"plugins/chat/init.lua:5"}"#
        )
        XCTAssertFalse(lines.contains { $0.contains("\"event\":\"error\"") }, lines.joined(separator: "\n"))
    }

    func testAPairWithAnUnknownChildSendsNothing() throws {
        try write(
            "plugins/chat/init.lua",
            """
            local mf = require "moonflow"
            return mf.compose {
              name = "chat", children = { list = "list", composer = "composer" },
              route = function(action) return "list", { type = "open" }, "drafts", { type = "clear" } end,
              combine = function(s) return s end,
            }
            """)
        let result = try Moonflow.run(
            ["run", "plugins/chat", "--format", "jsonl", "--clock", "virtual"], in: scratch, input: "{\"type\":\"x\"}\n"
        )
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(
            result.stdout.contains("chat: route sends action 'x' to unknown child 'drafts'; children: composer, list"),
            result.stdout)
        XCTAssertFalse(result.stdout.contains("opened"), "the list got nothing: \(result.stdout)")
    }

    func testTheRealClockReducesInTheVirtualClocksOrderEveryRun() throws {
        let virtual = try run("virtual")
        for attempt in 1...12 {
            XCTAssertEqual(try run("real"), virtual, "run \(attempt)")
        }
    }
}
