import Foundation
import LuaKit
import PluginFixtures
import MoonflowLua
import Streams
import XCTest

/// An action sent as JSON (`send(json:)`) is parsed straight into the Lua table `handle`
/// gets, and behaves as the same action sent as a value: same states, events, errors,
/// strategies and in-flight list.
final class JSONActionTests: XCTestCase {
    static let plugin = """
        local mf = require "moonflow"
        return mf.feature {
          name = "orders",
          initial = { log = {}, items = {} },
          actions = { add = { n = "integer", note = "string?" }, put = { item = "table" },
                      slow = { ms = "integer" }, boom = {} },
          mutations = { added = { n = "integer" }, item = { item = "table" } },
          strategy = { slow = "latest" },
          handle = function(a, state)
            if a.type == "add" then return { type = "added", n = a.n } end
            if a.type == "put" then return { type = "item", item = a.item } end
            if a.type == "slow" then return mf.timer(a.ms, { type = "added", n = a.ms }) end
            error("boom: " .. tostring(a.type))
          end,
          reduce = function(s, m)
            if m.type == "added" then s.log[#s.log + 1] = m.n else s.items[#s.items + 1] = m.item end
            return s
          end,
        }
        """

    /// The same inputs, once as values and once as JSON text: every event line is the same.
    func testJSONActionsGiveTheEventsTheSameValuesGive() throws {
        let inputs = [
            #"{"type":"add","n":1}"#, #"{"type":"add","n":2,"note":"hi"}"#,
            #"{"type":"put","item":{"name":"milk","tags":["cold",2],"none":[]}}"#,
            #"{"type":"slow","ms":100}"#, #"{"type":"slow","ms":50}"#, #"{"type":"boom"}"#,
        ]
        let byValue = try Harness(["orders/init.lua": Self.plugin])
        let byJSON = try Harness(["orders/init.lua": Self.plugin])
        try byValue.load("orders")
        try byJSON.load("orders")
        for text in inputs {
            try byValue.send(try LuaValue(json: text))
            try byJSON.feature.send(json: text)
            byJSON.settle()
        }
        byValue.advance(to: 200)
        byJSON.advance(to: 200)
        func lines(_ h: Harness) -> [String] { h.log.lines.map { $0.replacingOccurrences(of: h.dir, with: "DIR") } }
        XCTAssertEqual(lines(byJSON), lines(byValue))
        XCTAssertEqual(byJSON.state, byValue.state)
        XCTAssertEqual(byJSON.state["log"], [1, 2, 50], "latest cancelled the first slow action")
        XCTAssertEqual(Render.json(byJSON.state["items"] ?? .nil), #"[{"name":"milk","none":[],"tags":["cold",2]}]"#)
        XCTAssertTrue(byJSON.log.lines.contains { $0.contains("boom: boom") }, "\(byJSON.log.lines)")
    }

    func testTheErrorOfAFailingHandlerNamesTheActionParsedFromJSON() throws {
        let h = try Harness(["orders/init.lua": Self.plugin])
        let feature = try h.load("orders")
        let reported = Locked<FeatureError?>(nil)
        let token = feature.outlet.add(kinds: .error) { _ in reported.withLock { $0 = feature.eventError } }
        defer { token.dispose() }
        try feature.send(json: #"{"type":"boom"}"#)
        h.settle()
        XCTAssertEqual(reported.withLock { $0?.action }, ["type": "boom"])
        XCTAssertEqual(reported.withLock { $0?.stage }, .handle)
    }

    func testWorkInFlightNamesItsJSONAction() throws {
        let h = try Harness(["orders/init.lua": Self.plugin])
        let feature = try h.load("orders")
        try feature.send(json: #"{"type":"slow","ms":300}"#)
        h.settle()
        XCTAssertEqual(feature.inFlight.map(\.action), [["type": "slow", "ms": 300]])
        XCTAssertEqual(feature.inFlight.map(\.summary), ["slow #1"])
        feature.cancel(actionType: "slow")
        XCTAssertTrue(feature.inFlight.isEmpty, "cancelled by its type, read from the table")
    }

    func testMistakesAreRefusedAndLeaveTheStateAsItWas() throws {
        let h = try Harness(["orders/init.lua": Self.plugin])
        let feature = try h.load("orders")
        try feature.send(json: #"{"type":"add","n":7}"#)
        h.settle()
        let before = feature.state
        let cases: [(String, String)] = [
            (#"{"type":"add","n":}"#, "line 1, column 19: expected a JSON value"),
            (#"{"type":"nope"}"#, "undeclared action 'nope'"),
            (#"{"type":"add","n":1.5}"#, "field 'n' must be an integer"),
            (#"{"type":"add"}"#, "missing field 'n'"),
            (#"{"type":"add","n":1,"extra":true}"#, "extra"),
            (#"{"type":"put","item":3}"#, "field 'item' must be a table"),
            (#"[1,2]"#, "needs a string field 'type'"),
            ("42", "must be a table"),
        ]
        for (text, expected) in cases {
            var message = ""
            XCTAssertThrowsError(try feature.send(json: text), text) { message = "\($0)" }
            XCTAssertTrue(message.contains(expected), "\(text): \(message)")
            // The message is the one the same action sent as a value gets.
            if let value = try? LuaValue(json: text) {
                var byValue = ""
                XCTAssertThrowsError(try feature.send(value), text) { byValue = "\($0)" }
                XCTAssertEqual(message, byValue, text)
            }
            h.settle()
        }
        XCTAssertEqual(feature.state, before)
        XCTAssertTrue(feature.isIdle)
        XCTAssertEqual(h.log.errors.count, 0, "nothing was queued, so nothing failed in the loop")
    }

    /// Bytes as well as text.
    func testBytesTakeJSON() throws {
        let h = try Harness(["orders/init.lua": Self.plugin])
        let orders = try h.load("orders")
        try orders.send(json: Array(#"{"type":"add","n":3}"#.utf8))
        h.settle()
        XCTAssertEqual(orders.state["log"], [3])
    }
}
