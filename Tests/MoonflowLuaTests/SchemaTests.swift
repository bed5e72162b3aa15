import LuaKit
import PluginFixtures
import MoonflowLua
import XCTest

/// Declared actions and mutations: every violation names the action or mutation, the field and
/// the expected type, and leaves the state untouched.
final class SchemaTests: XCTestCase {
    static let plugin = """
        local mf = require "moonflow"
        return mf.feature {
          name = "shapes",
          initial = { text = "", count = 0 },
          actions = {
            query = { text = "string", limit = "integer?" },
            measure = { x = "number", flag = "boolean?", data = "table?", anything = "any?" },
            clear = {},
            emit = { m = "table" },
          },
          mutations = { setText = { text = "string" }, add = { n = "integer", note = "string?" } },
          handle = function(action, state)
            if action.type == "query" then return { type = "setText", text = action.text } end
            if action.type == "emit" then return action.m end
          end,
          reduce = function(state, m)
            if m.type == "setText" then state.text = m.text else state.count = state.count + m.n end
            return state
          end,
        }
        """

    private func loaded() throws -> Harness {
        let h = try Harness(["shapes/init.lua": Self.plugin])
        try h.load("shapes")
        return h
    }

    /// Sends `action`, expects it refused (`FeatureError` of stage `.send` over a `SchemaError`
    /// with `message`), and checks that nothing happened.
    private func assertRejected(_ h: Harness, _ action: LuaValue, _ message: String, line: UInt = #line) {
        let before = h.state
        let eventCount = h.log.timedEvents.count
        XCTAssertThrowsError(try h.send(action), line: line) { error in
            XCTAssertEqual((error as? FeatureError)?.stage, .send, line: line)
            XCTAssertEqual(((error as? FeatureError)?.underlying as? SchemaError)?.message, message, line: line)
        }
        h.advance(by: 10)
        XCTAssertEqual(h.state, before, "the state is untouched", line: line)
        XCTAssertEqual(h.log.timedEvents.count, eventCount, "nothing was handled", line: line)
    }

    func testValidActionsWithAndWithoutOptionalFields() throws {
        let h = try loaded()
        try h.send(["type": "query", "text": "a"])
        try h.send(["type": "query", "text": "b", "limit": 10])
        try h.send(["type": "measure", "x": 1])
        try h.send(["type": "measure", "x": 1.5, "flag": false, "data": ["k": 1], "anything": "x"])
        try h.send(["type": "clear"])
        XCTAssertEqual(
            h.log.lines,
            [
                #"0 state#0 {"count":0,"text":""}"#,
                #"0 action {"text":"a","type":"query"}"#,
                #"0 mutation#1 {"text":"a","type":"setText"}"#,
                #"0 state#1 {"count":0,"text":"a"}"#,
                #"0 action {"limit":10,"text":"b","type":"query"}"#,
                #"0 mutation#2 {"text":"b","type":"setText"}"#,
                #"0 state#2 {"count":0,"text":"b"}"#,
                #"0 action {"type":"measure","x":1}"#,
                #"0 action {"anything":"x","data":{"k":1},"flag":false,"type":"measure","x":1.5}"#,
                #"0 action {"type":"clear"}"#,
            ])
    }

    func testUndeclaredActionNamesTheDeclaredOnes() throws {
        assertRejected(
            try loaded(), ["type": "nope"],
            "undeclared action 'nope'; declared actions: clear, emit, measure, query. Add it to the feature's `actions` table"
        )
    }

    func testMissingField() throws {
        assertRejected(try loaded(), ["type": "query"], "action 'query': missing field 'text' (string)")
        assertRejected(try loaded(), ["type": "measure"], "action 'measure': missing field 'x' (number)")
    }

    func testWrongFieldType() throws {
        let h = try loaded()
        assertRejected(
            h, ["type": "query", "text": 3], "action 'query': field 'text' must be a string (got integer 3)")
        assertRejected(
            h, ["type": "measure", "x": "far"], "action 'measure': field 'x' must be a number (got string \"far\")")
        assertRejected(h, ["type": "emit", "m": true], "action 'emit': field 'm' must be a table (got boolean true)")
    }

    /// A refused action names every problem it has, field by field in name order, so it is
    /// fixed in one go (before: the first).
    func testEveryProblemOfARefusedActionIsNamed() throws {
        let h = try loaded()
        assertRejected(
            h, ["type": "query", "limit": "ten", "txt": "a", "extra": 1],
            "action 'query': field 'limit' must be an integer (got string \"ten\"); missing field 'text' (string); undeclared fields 'extra', 'txt'; declared fields: limit, text"
        )
        XCTAssertThrowsError(try h.running.send(json: #"{"type":"measure","x":"far","flag":"yes"}"#)) { error in
            XCTAssertEqual(
                ((error as? FeatureError)?.underlying as? SchemaError)?.message,
                "action 'measure': field 'flag' must be a boolean (got string \"yes\"); field 'x' must be a number (got string \"far\")",
                "the same from JSON")
        }
    }

    /// Action, mutation and output fields take the language `state` is declared in: lists,
    /// maps, enums and records, optional or not, checked item by item from Swift, from
    /// JSON and from `handle`, each misfit named by its place.
    func testCompositeFieldsAreCheckedItemByItem() throws {
        let h = try Harness([
            "cart/init.lua": """
            local mf = require "moonflow"
            local LINE = { sku = "string", qty = "integer" }
            return mf.feature {
              name = "cart",
              initial = { n = 0 },
              actions = {
                set = { lines = { "list", of = LINE }, mode = { "enum", "replace", "merge" }, tags = { "map?", of = "boolean" } },
                forward = { lines = "table" },
              },
              mutations = { set = { lines = { "list", of = LINE } } },
              handle = function(action)
                return { type = "set", lines = action.lines }
              end,
              reduce = function(state, m) state.n = #m.lines return state end,
            }
            """
        ])
        try h.load("cart")
        try h.send([
            "type": "set", "lines": [["sku": "tea", "qty": 2], ["sku": "jam", "qty": 1]], "mode": "merge",
            "tags": ["gift": true],
        ])
        try h.running.send(json: #"{"type":"set","lines":[],"mode":"replace"}"#)
        h.advance(by: 10)
        XCTAssertEqual(h.log.errors.map(\.message), [])
        XCTAssertEqual(h.state["n"], .integer(0))
        XCTAssertTrue(h.log.lines.contains(#"0 state#1 {"n":2}"#), "\(h.log.lines)")

        assertRejected(
            h, ["type": "set", "lines": [["sku": "tea", "qty": "2"]], "mode": "merge"],
            "action 'set': lines[1].qty must be an integer (got string \"2\")")
        assertRejected(
            h, ["type": "set", "lines": [["sku": "tea", "qyt": 2]], "mode": "merge"],
            "action 'set': lines[1] has no field 'qyt' (did you mean 'qty'?); declare it in action 'set'")
        assertRejected(
            h, ["type": "set", "lines": ["tea"], "mode": "swap", "tags": ["gift": "yes"]],
            "action 'set': lines[1] must be a record (got string \"tea\"); mode must be one of \"replace\", \"merge\" (got string \"swap\"); tags.gift must be a boolean (got string \"yes\")"
        )
        XCTAssertThrowsError(try h.running.send(json: #"{"type":"set","lines":{"sku":"tea"},"mode":"merge"}"#)) {
            error in
            XCTAssertEqual(
                ((error as? FeatureError)?.underlying as? SchemaError)?.message,
                "action 'set': lines must be a list, with items 1 to n only (got key \"sku\")", "the same from JSON")
        }
        // A mutation from `handle` meets its declaration too: a `table` action field lets a bad line through to it.
        try h.send(["type": "forward", "lines": [["sku": 1, "qty": 1]]])
        h.advance(by: 10)
        XCTAssertTrue(
            h.log.errors.last?.message.contains("mutation 'set': lines[1].sku must be a string (got integer 1)")
                == true, "\(h.log.errors)")
        XCTAssertEqual(h.state["n"], .integer(0))
    }

    /// A composite field's declaration is read as `state`'s is: a mistake in it is named by its place.
    func testACompositeFieldDeclarationIsChecked() {
        func composite(_ items: [LuaValue], _ fields: [LuaValue: LuaValue] = [:]) -> LuaValue {
            .table(LuaTable(array: items, hash: fields))
        }
        for (field, declared, expected) in [
            (
                "items", composite(["lits"], ["of": "string"]),
                #"action 'go'.items: unknown composite type "lits" (did you mean "list"?"#
            ),
            ("items", composite(["list"]), #"action 'go'.items: { "list" } needs the type of its items"#),
            ("pick", composite(["enum"]), "action 'go'.pick: an enum needs at least one value"),
        ] {
            let declaration = LuaValue.table(
                LuaTable(hash: ["go": .table(LuaTable(hash: [.string(LuaString(field)): declared]))]))
            let (_, problems) = Schema.read(kind: "action", declaration: declaration)
            XCTAssertTrue(problems.first?.message.hasPrefix(expected) == true, "\(field): \(problems)")
            XCTAssertEqual(problems.first?.path, ["go", field])
        }
    }

    func testOptionalFieldsAreStillTypeChecked() throws {
        let h = try loaded()
        assertRejected(
            h, ["type": "query", "text": "a", "limit": "ten"],
            "action 'query': field 'limit' must be an integer (got string \"ten\")")
        assertRejected(
            h, ["type": "query", "text": "a", "limit": 1.5],
            "action 'query': field 'limit' must be an integer (got number 1.5)")
        assertRejected(
            h, ["type": "measure", "x": 1, "flag": "yes"],
            "action 'measure': field 'flag' must be a boolean (got string \"yes\")")
        assertRejected(
            h, ["type": "measure", "x": 1, "data": 2], "action 'measure': field 'data' must be a table (got integer 2)")
    }

    func testUndeclaredFieldAndMalformedActions() throws {
        let h = try loaded()
        assertRejected(
            h, ["type": "query", "text": "a", "extra": 1],
            "action 'query': undeclared field 'extra'; declared fields: limit, text")
        assertRejected(h, "query", "an action must be a table with a string 'type' (got string)")
        assertRejected(
            h, ["text": "a"],
            "an action needs a string field 'type' naming it (got nil); declared: clear, emit, measure, query")
    }

    /// Sends an `emit` action whose handler returns `mutation`; expects one error event.
    private func assertMutationRejected(_ mutation: LuaValue, _ message: String, line: UInt = #line) throws {
        let h = try loaded()
        try h.send(["type": "query", "text": "kept"])
        let before = h.state
        h.clearLog()
        try h.send(["type": "emit", "m": mutation])
        XCTAssertEqual(
            h.log.lines, ["0 action {\"m\":\(Render.json(mutation)),\"type\":\"emit\"}", "0 error \(message)"],
            line: line)
        // Named at the function that returned it: `handle`, line 12 of the plugin.
        XCTAssertEqual(h.log.errors.first?.location, h.path("shapes/init.lua") + ":12", line: line)
        XCTAssertEqual(h.state, before, line: line)
        // The loop goes on and numbers the next reduced mutation right after the last one.
        try h.send(["type": "emit", "m": ["type": "add", "n": 2, "note": "fine"]])
        XCTAssertEqual(
            Array(h.log.lines.suffix(2)),
            [#"0 mutation#2 {"n":2,"note":"fine","type":"add"}"#, #"0 state#2 {"count":2,"text":"kept"}"#], line: line)
    }

    func testUndeclaredMutationFromHandle() throws {
        try assertMutationRejected(
            ["type": "bogus"],
            "undeclared mutation 'bogus'; declared mutations: add, setText. Add it to the feature's `mutations` table")
    }

    func testIllTypedMutationFromHandle() throws {
        try assertMutationRejected(
            ["type": "add", "n": "x"], "mutation 'add': field 'n' must be an integer (got string \"x\")")
        try assertMutationRejected(["type": "add"], "mutation 'add': missing field 'n' (integer)")
        try assertMutationRejected(
            ["type": "add", "n": 1, "note": 5], "mutation 'add': field 'note' must be a string (got integer 5)")
        try assertMutationRejected(
            ["type": "setText", "text": "t", "more": true],
            "mutation 'setText': undeclared field 'more'; declared fields: text")
    }
}
