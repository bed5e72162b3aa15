import LuaKit
import PluginFixtures
import MoonflowLua
import XCTest

/// A list keeps encoding as a JSON array when it becomes empty (typed decoders in Swift
/// and tools expect `[]`, not `{}`); `mf.array()` and `mf.object()` say so explicitly.
final class EmptyListTests: XCTestCase {
    static let plugin = """
        local mf = require "moonflow"
        return mf.feature {
          name = "todo",
          initial = { items = {}, tags = mf.array(), meta = mf.object() },
          actions = { add = { title = "string" }, remove = {}, clear = {}, object = {}, array = {} },
          mutations = { add = { title = "string" }, remove = {}, clear = {}, object = {}, array = {} },
          handle = function(a) return a end,
          reduce = function(s, m)
            if m.type == "add" then s.items[#s.items + 1] = m.title
            elseif m.type == "remove" then table.remove(s.items)
            elseif m.type == "clear" then s.items = {}
            elseif m.type == "object" then s.items = mf.object()
            elseif m.type == "array" then s.meta = mf.array(s.meta) end
            return s
          end,
        }
        """

    private func states(_ actions: [LuaValue]) throws -> [String] {
        let h = try Harness(["todo/init.lua": Self.plugin])
        try h.load("todo")
        for a in actions { try h.send(a) }
        XCTAssertTrue(h.log.errors.isEmpty, "\(h.log.lines)")
        return h.log.lines.filter { $0.contains(" state#") }.map { String($0.split(separator: " ", maxSplits: 2)[2]) }
    }

    func testAListEmptiedByRemovalStaysAnArray() throws {
        XCTAssertEqual(
            try states([["type": "add", "title": "a"], ["type": "remove"]]),
            [
                #"{"items":{},"meta":{},"tags":[]}"#,
                #"{"items":["a"],"meta":{},"tags":[]}"#,
                #"{"items":[],"meta":{},"tags":[]}"#,
            ])
    }

    func testAListReplacedByANewEmptyTableStaysAnArray() throws {
        XCTAssertEqual(
            try states([["type": "add", "title": "a"], ["type": "clear"]]).last, #"{"items":[],"meta":{},"tags":[]}"#)
    }

    func testMfObjectAndMfArraySayWhichExplicitly() throws {
        let out = try states([["type": "add", "title": "a"], ["type": "object"], ["type": "array"]])
        XCTAssertEqual(
            Array(out.suffix(2)), [#"{"items":{},"meta":{},"tags":[]}"#, #"{"items":{},"meta":[],"tags":[]}"#])
    }

    func testMfArrayRefusesATableWithAMetatableOfItsOwn() throws {
        let values = try Probe.run("return mf.just(mf.array(setmetatable({}, {})))")
        XCTAssertTrue(
            values.first?.contains("array: the table has a metatable of its own; state tables are plain data") == true,
            "\(values)")
        XCTAssertTrue(
            try Probe.run("return mf.just(mf.array(5))").first?.contains(
                "bad argument #1 to 'array' (table expected, got number)") == true)
    }
}
