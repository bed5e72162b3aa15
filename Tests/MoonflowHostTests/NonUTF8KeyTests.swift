import Foundation
import LuaKit
import MoonflowHost
import MoonflowHostTools
import MoonflowLua
import PluginFixtures
import XCTest

/// A declared `state` whose field is named by bytes that are not UTF-8 (`"\xff"`): the
/// declaration kept the field's name as decoded text (U+FFFD), so the same key in `initial`
/// did not match it, and a write to it in reduce was an unknown field (issue 48).
final class NonUTF8KeyTests: XCTestCase {
    private static let source = """
        local mf = require "moonflow"
        return mf.feature {
          name = "bytes",
          initial = { ["\\xff"] = 0, ok = 1 },
          state = { ["\\xff"] = "integer", ok = "integer" },
          actions = { go = {} }, mutations = { go = {} },
          handle = function(a) return { type = "go" } end,
          reduce = function(state) state["\\xff"] = state["\\xff"] + 1 return state end,
        }
        """

    func testANonUTF8KeyDeclaredInStateMatchesTheSameKeyInInitialAndInReduce() throws {
        let h = try Harness(["bytes/init.lua": Self.source])
        try h.load("bytes")
        try h.running.send(["type": "go"])
        h.settle()
        XCTAssertEqual(h.log.errors.map(\.message), [])
        guard case .table(let state) = h.running.state else { return XCTFail("\(h.running.state)") }
        XCTAssertEqual(state[.string(LuaString(bytes: [0xFF]))], .integer(1))
    }

    /// An enum value that is not UTF-8 is compared by its bytes: the same bytes fit, others do not.
    func testAnEnumValueThatIsNotUTF8MatchesTheSameBytes() throws {
        let h = try Harness([
            "bytes/init.lua": """
            local mf = require "moonflow"
            return mf.feature {
              name = "bytes", initial = { mode = "a" }, state = { mode = { "enum", "a", "\\xff" } },
              actions = { go = { to = "string" } }, mutations = { go = { to = "string" } },
              handle = function(a) return { type = "go", to = a.to } end,
              reduce = function(s, m) s.mode = m.to == "ff" and "\\xff" or "\\xfe" return s end,
            }
            """
        ])
        try h.load("bytes")
        try h.send(["type": "go", "to": "ff"])
        h.advance(by: 10)
        XCTAssertEqual(h.log.errors.map(\.message), [])
        XCTAssertEqual(h.state["mode"], .string(LuaString(bytes: [0xFF])))
        try h.send(["type": "go", "to": "fe"])
        h.advance(by: 10)
        XCTAssertTrue(h.log.errors.first?.message.contains("state.mode must be one of") == true, "\(h.log.errors)")
        XCTAssertEqual(h.state["mode"], .string(LuaString(bytes: [0xFF])), "the refused write is undone")
    }
}
