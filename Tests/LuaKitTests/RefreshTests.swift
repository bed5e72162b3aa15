import LuaKit
import XCTest

/// Refreshing a snapshot copies only what changed; the result must always equal a full copy.
final class RefreshTests: XCTestCase {
    func testRefreshEqualsAFullCopyAfterEveryKindOfChange() throws {
        let lua = try LuaState()
        try lua.run(
            string: """
                state = { n = 1, name = "a", rows = {}, flags = { on = true }, nested = { deep = { x = 1.5 } } }
                for i = 1, 20 do state.rows[i] = { id = i, name = "row" .. i, score = i * 1.5, tags = { "t" .. i } } end
                steps = {
                  function(s) s.n = s.n + 1 end,                          -- a scalar
                  function(s) s.rows[3].score = -0.0 end,                 -- deep in the sequence
                  function(s) s.rows[21] = { id = 21 } end,              -- the sequence grows
                  function(s) s.rows[21] = nil end,                       -- and shrinks
                  function(s) s.flags.off = false end,                    -- a new key
                  function(s) s.flags.on = nil end,                       -- a key goes away
                  function(s) s.name = "b" end,                           -- a string
                  function(s) s.nested.deep.x = 0/0 end,                  -- NaN as a value
                  function(s) s.rows[5].tags[1] = "changed" end,
                  function(s) s.nested = "replaced" end,                  -- a table becomes a string
                  function(s) s.nested = { again = { 1, 2, 3 } } end,     -- and a table again
                  function(s) s.rows = setmetatable({}, getmetatable(s.rows)) end,
                  function(s) end,                                        -- nothing at all
                }
                function step(i) steps[i](state) return state end
                """, name: "refresh.lua")
        let step = try lua.ref(global: "step")
        let stateRef = try lua.ref(global: "state")
        var snapshot = try lua.value(of: stateRef, path: "state")
        for i in 1...13 {
            let (refreshed, full) = try lua.call(step, [.value(.integer(Int64(i)))]) { slots in
                (try slots.value(1, refreshing: snapshot, path: "state"), try slots.value(1, path: "state"))
            }
            // Bit-for-bit equal (NaN included), through their descriptions.
            XCTAssertEqual(refreshed.description, full.description, "step \(i)")
            if i >= 12 {
                // `rows` was a list, so emptied it stays one; the refresh marks the Lua table so,
                // and a full copy made after it (or JSON written from the table) knows it too.
                guard case .table(let rows)? = refreshed["rows"], case .table(let fullRows)? = full["rows"] else {
                    return XCTFail("rows")
                }
                XCTAssertTrue(rows.isJSONArray, "step \(i): an emptied list encodes as []")
                XCTAssertTrue(fullRows.isJSONArray, "step \(i): the Lua table carries the array marker")
                XCTAssertEqual(
                    String(decoding: try lua.jsonBytes(of: stateRef), as: UTF8.self), try refreshed.json(), "step \(i)")
            } else if !full.description.contains("nan") {
                XCTAssertEqual(refreshed, full, "step \(i)")  // NaN != NaN
            }
            snapshot = refreshed
        }
    }

    func testUnchangedRefreshSharesTheOldValue() throws {
        let lua = try LuaState()
        let make = try lua.load(string: "t = { a = { 1, 2, 3 }, b = 'x' } return t", name: "t")
        let old = try lua.call(make)[0]
        let again = try lua.ref(global: "t")
        let same = try lua.call(try lua.load(string: "return t", name: "r"), []) {
            try $0.value(1, refreshing: old, path: "t")
        }
        XCTAssertEqual(same, old)
        XCTAssertTrue(sharesStorage(same["a"], old["a"]), "the unchanged list is the old one, not a copy")
        // A change beside it copies only the changed field: the list is still shared.
        let changed = try lua.call(try lua.load(string: "t.b = 'y' return t", name: "c"), []) {
            try $0.value(1, refreshing: old, path: "t")
        }
        XCTAssertEqual(changed["b"], "y")
        XCTAssertTrue(sharesStorage(changed["a"], old["a"]), "the untouched list is shared with the last snapshot")
        // A full read makes new storage (what the check above would catch).
        XCTAssertFalse(sharesStorage(try lua.value(of: again)["a"], old["a"]))
    }

    /// Whether two tables' sequence parts are one buffer (shared, not copied).
    private func sharesStorage(_ a: LuaValue?, _ b: LuaValue?) -> Bool {
        guard case .table(let x)? = a, case .table(let y)? = b else { return false }
        return x.array.withUnsafeBufferPointer { p in
            y.array.withUnsafeBufferPointer { q in p.baseAddress == q.baseAddress }
        }
    }

    func testRefreshStillRefusesFunctionsAndCyclesWithTheirPath() throws {
        let lua = try LuaState()
        let old = try lua.run(string: "t = { rows = { { id = 1 } } } return t", name: "t")[0]
        XCTAssertThrowsError(
            try lua.call(try lua.load(string: "t.rows[1].cb = print return t", name: "f"), []) {
                try $0.value(1, refreshing: old, path: "state")
            }
        ) { error in
            XCTAssertTrue("\(error)".hasPrefix("state.rows[1].cb: a function"), "\(error)")
        }
        XCTAssertThrowsError(
            try lua.call(try lua.load(string: "t.rows[1].cb = nil t.rows[1].me = t return t", name: "c"), []) {
                try $0.value(1, refreshing: old, path: "state")
            }
        ) { error in
            XCTAssertTrue("\(error)".hasPrefix("state.rows[1].me: a cycle"), "\(error)")
        }
    }
}

/// Lists that grow or shrink keep sharing their unchanged items.
final class RefreshGrowthTests: XCTestCase {
    func testAGrowingOrShrinkingListRefreshesToTheSameValueAsAFullRead() throws {
        let lua = try LuaState()
        let table = try lua.ref(.value(["items": [["id": 1], ["id": 2]], "n": 2]))
        let grow = try lua.load(
            string: "local t = ...; t.items[#t.items + 1] = { id = 3 }; t.n = 3; return t", name: "grow")
        let shrink = try lua.load(
            string: "local t = ...; t.items[#t.items] = nil; t.items[#t.items] = nil; t.n = 1; return t", name: "shrink"
        )
        var snapshot = try lua.value(of: table)
        for step in [grow, grow, shrink, grow] {
            let refreshed = try lua.call(step, [.ref(table)]) { try $0.value(1, refreshing: snapshot, path: "state") }
            let full = try lua.value(of: table)
            XCTAssertEqual(refreshed, full)
            snapshot = refreshed
        }
        XCTAssertEqual(snapshot, ["items": [["id": 1], ["id": 2], ["id": 3]], "n": 3])
    }
}

/// What cannot cross into Swift is refused with its path, in reads and refreshes alike:
/// NaN, keys that are neither strings nor integers, tables with metatables of their own.
final class PlainDataTests: XCTestCase {
    private func refused(_ change: String, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let lua = try LuaState()
        lua.plainDataOnly = true
        _ = try lua.run(string: "t = { x = 1.5, y = {} }", name: "setup")
        let old = try lua.value(of: try lua.ref(global: "t"))
        var messages: [String] = []
        let step = try lua.load(string: "\(change); return t", name: "change")
        do {
            _ = try lua.call(step, []) { try $0.value(1, refreshing: old, path: "state") }
            XCTFail("the refresh took it", file: file, line: line)
        } catch { messages.append("\(error)") }
        do {
            _ = try lua.value(of: try lua.ref(global: "t"), path: "state")
            XCTFail("the read took it", file: file, line: line)
        } catch { messages.append("\(error)") }
        XCTAssertEqual(messages[0], messages[1], "read and refresh say the same", file: file, line: line)
        return messages[0]
    }

    func testNaNIsRefusedWithItsPath() throws {
        XCTAssertTrue(try refused("t.x = 0/0").contains("state.x: NaN (not a number)"))
    }

    func testKeysThatAreNeitherStringsNorIntegersAreRefused() throws {
        XCTAssertTrue(
            try refused("t.y[true] = 1").contains("state.y: a key of type boolean (true); keys are strings or integers")
        )
        XCTAssertTrue(try refused("t.y[1.5] = 1").contains("state.y: a key of type float (1.5)"))
    }

    func testATableWithAMetatableIsRefused() throws {
        XCTAssertTrue(
            try refused("t.y = setmetatable({}, { __index = t })").contains("state.y: a table with a metatable"))
    }

    func testTheArrayAndObjectMarkersArePlainData() throws {
        let lua = try LuaState()
        lua.plainDataOnly = true
        let empty = try lua.ref(.value(.table(LuaTable(isJSONArray: true))))  // carries the array marker
        XCTAssertEqual(try lua.value(of: empty), .table(LuaTable(isJSONArray: true)))
        let marked = try lua.load(string: "return setmetatable({}, { __name = 'moonflow.object' })", name: "m")
        XCTAssertEqual(try lua.call(marked)[0], .table(LuaTable()))
        let lookalike = try lua.load(
            string: "return setmetatable({}, { __name = 'moonflow.object', __index = string })", name: "l")
        XCTAssertThrowsError(try lua.call(lookalike))
    }
}
