@testable import LuaKit
import XCTest

/// What a debugger reads of the Lua code stopped under it: the frames with their files and
/// lines, each frame's locals and upvalues as text, a table's fields on demand, and none
/// of it running the plugin's metamethods.
final class FrameReadingTests: XCTestCase {
    private let script = """
        local shared = { hits = 3 }
        local function reduce(state, mutation)
          local doubled = mutation.by * 2
          local note = "line\\n\\"two\\""
          local proxy = setmetatable({}, { __index = function() error("a look ran __index") end,
                                           __tostring = function() error("a look ran __tostring") end })
          local long = string.rep("x", 300)
          look()
          return doubled, shared, note, proxy, long
        end
        local function dispatch(action)
          return (reduce({ count = 1, items = { "a", "b" }, ["odd key"] = true }, action))  -- not a tail call
        end
        return (dispatch({ type = "add", by = 21 }))
        """

    /// Runs the script with `look` reading what a debugger would at that point.
    private func look(_ body: @escaping @Sendable (LuaSlots, LuaRef) throws -> Void) throws {
        let lua = try LuaState(profile: .trusted)
        let holder = try lua.makeTable([])
        // `look` runs on this thread, inside `run`: the box is read after it returns.
        final class Failure: @unchecked Sendable { var error: (any Error)? }
        let failure = Failure()
        try lua.setGlobal(
            "look",
            .function { slots in
                do { try body(slots, holder) } catch { failure.error = error }
                return []
            })
        _ = try lua.run(string: script, name: "plugins/counter/init.lua")
        if let error = failure.error { throw error }
    }

    func testFramesNameTheFileTheLineAndTheFunction() throws {
        try look { slots, _ in
            let frames = slots.frames()
            XCTAssertEqual(frames.map(\.line), [8, 12, 14])
            XCTAssertEqual(frames.map(\.source), Array(repeating: "plugins/counter/init.lua", count: 3))
            XCTAssertEqual(frames.first?.name, "reduce")
            XCTAssertEqual(frames.first?.lineDefined, 2)
            XCTAssertEqual(frames.last?.what, "main")
            XCTAssertEqual(slots.frames(from: 0).first?.what, "C", "level 0 is the Swift function itself")
        }
    }

    func testLocalsAndUpvaluesReadAsTextWithoutMetamethods() throws {
        try look { slots, holder in
            let locals = try slots.variables(.locals, level: 1, holder: holder)
            XCTAssertEqual(locals.map(\.name), ["state", "mutation", "doubled", "note", "proxy", "long"])
            let byName = Dictionary(uniqueKeysWithValues: locals.map { ($0.name, $0) })
            XCTAssertEqual(byName["doubled"]?.text, "42")
            XCTAssertEqual(byName["doubled"]?.type, "number")
            XCTAssertEqual(byName["note"]?.text, #""line\n\"two\"""#)
            XCTAssertEqual(byName["proxy"]?.text, "table (0 entries)", "no __tostring ran")
            XCTAssertEqual(byName["long"]?.text.count, 200 + 2 + 3, "cut at 200 bytes, quoted, with ...")
            XCTAssertEqual(byName["state"]?.text, "table (3 entries)")
            XCTAssertNotNil(byName["state"]?.ref)

            let upvalues = try slots.variables(.upvalues, level: 1, holder: holder)
            XCTAssertEqual(upvalues.map(\.name), ["shared"], "_ENV is the globals, not a variable")
            let outer = try slots.variables(.locals, level: 2, holder: holder)
            XCTAssertEqual(outer.map(\.name), ["action"])
        }
    }

    func testATablesFieldsListTheArrayFirstAndOpenFurtherTables() throws {
        try look { slots, holder in
            let locals = try slots.variables(.locals, level: 1, holder: holder)
            let state = try XCTUnwrap(locals.first { $0.name == "state" }?.ref)
            let fields = try slots.fields(of: state, holder: holder)
            XCTAssertEqual(fields.map(\.name), ["count", "items", "odd key"], "by name")
            let items = try XCTUnwrap(fields.first { $0.name == "items" })
            XCTAssertEqual(items.text, "table (2 entries)")
            let inner = try slots.fields(of: try XCTUnwrap(items.ref), holder: holder)
            XCTAssertEqual(inner.map(\.name), ["[1]", "[2]"])
            XCTAssertEqual(inner.map(\.text), [#""a""#, #""b""#])

            let proxy = try XCTUnwrap(locals.first { $0.name == "proxy" }?.ref)
            XCTAssertEqual(try slots.fields(of: proxy, holder: holder), [], "no __index ran")
        }
    }

    func testAFrameOrTableThatIsNotThereIsAnError() throws {
        try look { slots, holder in
            XCTAssertThrowsError(try slots.variables(.locals, level: 40, holder: holder)) { error in
                XCTAssertTrue("\(error)".contains("no frame 40"), "\(error)")
            }
            XCTAssertThrowsError(try slots.fields(of: 999, holder: holder)) { error in
                XCTAssertTrue("\(error)".contains("no table 999"), "\(error)")
            }
            XCTAssertEqual(slots.frames(from: 40), [])
        }
    }

    func testAnExpressionReadsTheFramesNamesAndChangesNothing() throws {
        try look { slots, holder in
            XCTAssertEqual(try slots.evaluate("doubled + 1", level: 1, holder: holder).text, "43")
            XCTAssertEqual(
                try slots.evaluate("state.items[2] .. #state.items", level: 1, holder: holder).text, #""b2""#)
            XCTAssertEqual(try slots.evaluate("shared.hits * 2", level: 1, holder: holder).text, "6", "an upvalue")
            XCTAssertEqual(
                try slots.evaluate("string.upper(mutation.type)", level: 1, holder: holder).text, #""ADD""#, "a global")
            XCTAssertEqual(try slots.evaluate("action.by", level: 2, holder: holder).text, "21", "another frame")

            let state = try slots.evaluate("state", level: 1, holder: holder)
            XCTAssertEqual(state.text, "table (3 entries)", "the table itself, not a stand-in")
            XCTAssertEqual(try slots.fields(of: try XCTUnwrap(state.ref), holder: holder).count, 3)

            XCTAssertThrowsError(try slots.evaluate("(function() state.count = 9 end)()", level: 1, holder: holder)) {
                error in
                XCTAssertTrue("\(error)".contains("evaluate cannot change a table (it wrote count)"), "\(error)")
            }
            XCTAssertThrowsError(
                try slots.evaluate("(function() table.insert(state.items, 'c') end)()", level: 1, holder: holder))
            XCTAssertEqual(
                try slots.evaluate("state.count .. #state.items", level: 1, holder: holder).text, #""12""#,
                "the writes were refused")
            XCTAssertThrowsError(try slots.evaluate("doubled +", level: 1, holder: holder)) { error in
                XCTAssertTrue("\(error)".contains("(evaluate)"), "\(error)")
            }
        }
    }
}
