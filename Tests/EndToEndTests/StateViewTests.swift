import Foundation
import XCTest

/// The views of the state a plugin's functions get: raw access is refused, a view kept
/// past its call fails naming the field, and a value the state cannot hold rolls the reduce back.
final class StateViewTests: ScratchTestCase {
    func testRawAccessToAViewIsRefusedAndLeavesTheStateWhole() throws {
        try write(
            "plugins/raw/init.lua",
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "raw", initial = { count = 0 }, actions = { raw = {}, rawh = {}, inc = {} }, mutations = { raw = {}, inc = {} },
              handle = function(a, s)
                if a.type == "rawh" then return { type = "inc", n = rawget(s, "count") } end
                return { type = a.type }
              end,
              reduce = function(s, m)
                if m.type == "raw" then rawset(s, "count", 1000) end
                s.count = s.count + 1
                return s
              end,
            }
            """)
        // Under the sandbox too, whose definition takes its raw functions before the host
        // has made a single view.
        for extra in [[], ["--sandbox"]] {
            let result = try runJSONL(
                "raw", [#"{"type":"raw"}"#, #"{"type":"inc"}"#, #"{"type":"rawh"}"#, #"{"type":"inc"}"#], extra)
            let messages = jsonlErrors(result.stdout)
            XCTAssertEqual(messages.count, 2, "\(extra): \(result.stdout)")
            XCTAssertTrue(
                messages.first?.contains("rawset on count: the state is a view, not a plain table") == true,
                "\(extra): \(messages)")
            XCTAssertTrue(
                messages.last?.contains("rawget on state.count: the state is a view") == true, "\(extra): \(messages)")
            XCTAssertEqual(
                jsonlLastState(result.stdout)?["count"] as? Int, 2,
                "both incs counted, the raw write rolled back \(extra)")
        }
    }

    /// Under `--sandbox` the refusal of `rawset` on a view pointed at the sandbox's own code
    /// (`[moonflow sandbox]:64`), which wraps rawset, instead of the plugin's line.
    func testARawsetOnAViewUnderTheSandboxNamesThePluginsLine() throws {
        try write(
            "plugins/raw/init.lua",
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "raw", initial = { count = 0 }, actions = { raw = {} }, mutations = { raw = {} },
              handle = function(a) return { type = "raw" } end,
              reduce = function(s)
                rawset(s, "count", 5)
                return s
              end,
            }
            """)
        for extra in [[], ["--sandbox"]] {
            let result = try runJSONL("raw", [#"{"type":"raw"}"#], extra)
            let events = jsonlEvents(result.stdout).filter { $0["event"] as? String == "error" }
            XCTAssertEqual(events.count, 1, "\(extra): \(result.stdout)")
            let message = events.first?["message"] as? String ?? ""
            XCTAssertTrue(message.contains("rawset on count: the state is a view"), "\(extra): \(message)")
            XCTAssertTrue(message.hasPrefix("plugins/raw/init.lua:6: "), "\(extra): \(message)")
            XCTAssertEqual(events.first?["where"] as? String, "plugins/raw/init.lua:6", "\(extra): \(result.stdout)")
        }
    }

    func testAViewKeptPastItsCallFailsNamingTheField() throws {
        try write(
            "plugins/kept/init.lua",
            """
            local mf = require "moonflow"
            local KEPT, SEEN
            return mf.feature {
              name = "kept", initial = { count = 0 }, actions = { keep = {}, poke = {}, look = {}, peek = {} }, mutations = { keep = {}, peek = {} },
              handle = function(a, s)
                if a.type == "poke" then KEPT.count = 777 return end
                if a.type == "look" then SEEN = s return end
                return { type = a.type }
              end,
              reduce = function(s, m)
                if m.type == "keep" then KEPT = s end
                if m.type == "peek" then s.count = SEEN.count + 1 end
                return s
              end,
            }
            """)
        let result = try runJSONL(
            "kept", [#"{"type":"keep"}"#, #"{"type":"poke"}"#, #"{"type":"look"}"#, #"{"type":"peek"}"#])
        let messages = jsonlErrors(result.stdout)
        XCTAssertEqual(messages.count, 2, result.stdout)
        XCTAssertTrue(
            messages.first?.contains("count: this view of the state was kept after its reduce call returned") == true,
            messages.description)
        XCTAssertTrue(
            messages.last?.contains("state.count: this view of the state was kept after its handle call returned")
                == true, messages.description)
        XCTAssertEqual(jsonlLastState(result.stdout)?["count"] as? Int, 0, "nothing written through a kept view")
    }

    func testAViewKeptFromOneHandleFailsInTheNextNamingTheField() throws {
        try write(
            "plugins/later/init.lua",
            """
            local mf = require "moonflow"
            local SEEN, ITEMS
            return mf.feature {
              name = "later", initial = { count = 3, items = { 10, 20 } },
              actions = { keep = {}, read = {}, len = {}, walk = {}, item = {}, fresh = {} }, mutations = { saw = { n = "integer" } },
              handle = function(a, s)
                if a.type == "keep" then SEEN, ITEMS = s, s.items return end
                if a.type == "read" then return { type = "saw", n = SEEN.count } end
                if a.type == "len" then return { type = "saw", n = #ITEMS } end
                if a.type == "walk" then for k in pairs(SEEN) do end return end
                if a.type == "item" then return { type = "saw", n = ITEMS[1] } end
                return { type = "saw", n = s.count + #s.items }
              end,
              reduce = function(s, m) s.count = m.n return s end,
            }
            """)
        let result = try runJSONL(
            "later", ["keep", "read", "len", "walk", "item", "fresh"].map { #"{"type":"\#($0)"}"# })
        let messages = jsonlErrors(result.stdout)
        XCTAssertEqual(messages.count, 4, result.stdout)
        for (message, field) in zip(messages, ["state.count", "state.items", "state", "state.items[1]"]) {
            XCTAssertTrue(
                message.contains("\(field): this view of the state was kept after its handle call returned"),
                "\(field): \(message)")
        }
        XCTAssertEqual(
            jsonlLastState(result.stdout)?["count"] as? Int, 5, "a fresh view in a later call reads as usual")
    }

    /// A view kept in a global by one reduce read and wrote inside a later one: after the
    /// reducer replaced the state's table, the write landed in the old table, silently.
    func testAViewKeptFromOneReduceFailsInALaterReduceNamingTheField() throws {
        try write(
            "plugins/later/init.lua",
            """
            local mf = require "moonflow"
            local KEPT, ITEMS
            return mf.feature {
              name = "later", initial = { count = 0, items = { n = 0 } },
              actions = { keep = {}, replace = {}, poke = {}, peek = {}, touch = {} },
              mutations = { keep = {}, replace = {}, poke = {}, peek = {}, touch = {} },
              handle = function(a) return { type = a.type } end,
              reduce = function(s, m)
                if m.type == "keep" then KEPT = s ITEMS = s.items end
                if m.type == "replace" then return { count = s.count + 1, items = { n = 0 } } end
                if m.type == "poke" then KEPT.count = 777 end
                if m.type == "peek" then s.count = ITEMS.n + 100 end
                if m.type == "touch" then ITEMS.n = 5 end
                return s
              end,
            }
            """)
        for sandbox in [[], ["--sandbox"]] {
            let result = try runJSONL(
                "later",
                [
                    #"{"type":"keep"}"#, #"{"type":"replace"}"#, #"{"type":"poke"}"#,
                    #"{"type":"peek"}"#, #"{"type":"touch"}"#,
                ], sandbox)
            let messages = jsonlErrors(result.stdout)
            XCTAssertEqual(messages.count, 3, "\(sandbox): \(result.stdout)")
            XCTAssertTrue(
                messages.first?.contains("count: this view of the state was kept after its reduce call returned")
                    == true,
                "\(sandbox): \(messages)")
            for message in messages.dropFirst() {
                XCTAssertTrue(
                    message.contains("n: this view of the state was kept after its reduce call returned"),
                    "\(sandbox): \(message)")
            }
            let state = jsonlLastState(result.stdout)
            XCTAssertEqual(
                state?["count"] as? Int, 1, "nothing written through a kept view (\(sandbox)): \(result.stdout)")
            XCTAssertEqual((state?["items"] as? [String: Any])?["n"] as? Int, 0, "\(sandbox): \(result.stdout)")
        }
    }

    func testInfinityIsRefusedLikeNaNWithRollback() throws {
        try write(
            "plugins/inf/init.lua",
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "inf", initial = { x = 1 }, actions = { up = {}, down = {}, ok = {} }, mutations = { set = { x = "number" }, down = {} },
              handle = function(a)
                if a.type == "up" then return { type = "set", x = math.huge } end
                if a.type == "down" then return { type = "down" } end
                return { type = "set", x = 2.5 }
              end,
              reduce = function(s, m)
                if m.type == "down" then s.x = -math.huge else s.x = m.x end
                return s
              end,
            }
            """)
        let result = try runJSONL("inf", [#"{"type":"up"}"#, #"{"type":"down"}"#, #"{"type":"ok"}"#])
        XCTAssertEqual(result.status, 1)
        let messages = jsonlErrors(result.stdout)
        XCTAssertEqual(messages.count, 2, result.stdout)
        XCTAssertTrue(
            messages.first?.contains("infinity (math.huge) cannot be copied out of Lua") == true, messages.description)
        XCTAssertTrue(
            messages.last?.contains("-infinity (math.huge) cannot be copied out of Lua") == true, messages.description)
        XCTAssertEqual(jsonlLastState(result.stdout)?["x"] as? Double, 2.5)
        let xs = jsonlEvents(result.stdout).compactMap { ($0["state"] as? [String: Any])?["x"] as? Double }
        XCTAssertEqual(xs, [1, 2.5], "no state holds an infinity")
    }
}
