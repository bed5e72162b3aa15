import Foundation
import LuaKit
import MoonflowLua
import XCTest

/// A reducer writes through logged views: the snapshot takes only the written entries,
/// and observers learn which paths changed. Checked against a fresh read of the Lua
/// table after every kind of write a reducer can make.
final class StateWritesTests: XCTestCase {
    /// Each `step` mutation runs one of many kinds of writes, chosen by its seed.
    static let plugin = """
        local mf = require "moonflow"
        return mf.feature {
          name = "writes",
          initial = { n = 0, list = {}, nums = { 3, 1, 2 }, m = {}, a = { x = 1 }, entries = {} },
          actions = { step = { seed = "integer" } },
          mutations = { step = { seed = "integer" } },
          handle = function(a) return { type = "step", seed = a.seed } end,
          reduce = function(state, m)
            local r = m.seed
            local function rand(n) r = (r * 1103515245 + 12345) % 2147483648; return r % n end
            local kind = rand(18)
            if kind == 0 then state.n = state.n + 1
            elseif kind == 1 then state.list[#state.list + 1] = { v = rand(100) }
            elseif kind == 2 then if #state.list > 0 then table.remove(state.list, rand(#state.list) + 1) end
            elseif kind == 3 then table.insert(state.list, rand(#state.list + 1) + 1, { w = rand(9) })
            elseif kind == 4 then state.list = {}
            elseif kind == 5 then
              local keys = { "x", "y", 1, 2, 5 }
              local values = { 1, "s", false, { deep = { 1, 2 } }, nil }
              state.m[keys[rand(5) + 1]] = values[rand(5) + 1]
            elseif kind == 6 then state.a.deep = { k = { rand(5) } }; state.a.deep.k[2] = rand(5)
            elseif kind == 7 then state.b = state.a; state.a.z = rand(50)
            elseif kind == 8 then state.c = state.list; state.list = mf.array()
            elseif kind == 9 then table.sort(state.nums)
            elseif kind == 10 then local t = { q = rand(7) }; state.p1 = t; state.p2 = t
            elseif kind == 11 then
              local s = {}
              for k, v in pairs(state) do s[k] = v end
              s.n = state.n + 100
              return s
            elseif kind == 12 then state.m = mf.object(state.m)
            elseif kind == 13 then
              local k = "e" .. rand(3)
              local e = state.entries[k] or {}
              state.entries[k] = e
              e.count = (e.count or 0) + 1
            elseif kind == 14 then for i, v in ipairs(state.nums) do state.nums[i] = v + 1 end
            elseif kind == 15 then state.n = -1; state.list[1] = "lost"; error("boom")
            elseif kind == 16 then state.nums[#state.nums + 1] = rand(10); state.b = nil; state.c = nil
            elseif kind == 17 then state.list = mf.array(state.list); state.p1, state.p2 = nil, nil
            end
            return state
          end,
        }
        """

    func testTheSnapshotAndTheReportedChangesFollowEveryKindOfWriteExactly() throws {
        let h = try Harness(["writes/init.lua": Self.plugin])
        let feature = try h.load("writes")
        let seen = Seen(previous: feature.state)
        let observation = feature.outlet.add { event in
            switch event {
            case .state(let state, let seq) where seq > 0:
                let fresh = try? feature.readStateTable()
                // As text: an emptied list stays `[]` in the snapshot, which a fresh read cannot know.
                XCTAssertEqual(
                    state.description, fresh?.description, "seq \(seq): the snapshot differs from the Lua table")
                // As JSON written straight from the Lua table: the emptied lists' `[]` too.
                XCTAssertEqual(
                    try? String(decoding: feature.stateJSON(), as: UTF8.self), try? state.json(),
                    "seq \(seq): JSON from Lua")
                guard let changes = feature.deliveredChanges else { return XCTFail("seq \(seq): no changes reported") }
                // The outermost changes, each written into the previous snapshot, give the new one.
                let previous = seen.previous
                let outermost = StateChange.outermost(changes)
                var patched = previous
                for change in outermost { patched = setting(change.new, at: change.path[...], in: patched) }
                XCTAssertEqual(canonical(patched), canonical(state), "seq \(seq): \(changes)")
                XCTAssertEqual(outermost.allSatisfy { $0.old == $0.new }, previous == state, "seq \(seq): \(changes)")
                seen.previous = state
                seen.checked += 1
            case .error:
                seen.failures += 1
                XCTAssertEqual(feature.state.description, try? feature.readStateTable().description, "rolled back")
                XCTAssertEqual(
                    try? String(decoding: feature.stateJSON(), as: UTF8.self), try? feature.state.json(),
                    "rolled back, as JSON")
            default: break
            }
        }
        defer { observation.dispose() }
        for seed in 1...600 { try h.send(["type": "step", "seed": .integer(Int64(seed * 7919))]) }
        XCTAssertGreaterThan(seen.checked, 400)
        XCTAssertGreaterThan(seen.failures, 10)
    }

    func testAOneFieldChangeOfALargeStateReportsOnePath() throws {
        let h = try Harness([
            "rows/init.lua": """
            local mf = require "moonflow"
            local rows = {}
            for i = 1, 1000 do rows[i] = { id = i, name = "row " .. i } end
            return mf.feature {
              name = "rows", initial = { rows = rows, title = "t" },
              actions = { rename = { i = "integer", name = "string" } },
              mutations = { rename = { i = "integer", name = "string" } },
              handle = function(a) return { type = "rename", i = a.i, name = a.name } end,
              reduce = function(state, m) state.rows[m.i].name = m.name; return state end,
            }
            """
        ])
        let feature = try h.load("rows")
        let seen = Seen(previous: .nil)
        let observation = feature.outlet.add { event in
            if case .state = event { seen.changes = feature.deliveredChanges }
        }
        defer { observation.dispose() }
        try h.send(["type": "rename", "i": 500, "name": "renamed"])
        XCTAssertEqual(seen.changes, [StateChange(path: ["rows", 500, "name"], old: "row 500", new: "renamed")])
        XCTAssertEqual(seen.changes?.first?.topLevelKey, "rows")
        XCTAssertEqual(feature.state["rows"]?[499]?["name"], "renamed")
        XCTAssertEqual(feature.state["rows"]?[498]?["name"], "row 499")
    }

    func testATableInTwoPlacesChangesOnItsOwnAfterwards() throws {
        let h = try Harness([
            "alias/init.lua": """
            local mf = require "moonflow"
            return mf.feature {
              name = "alias", initial = { a = { x = 1 } },
              actions = { copy = {}, bump = {} }, mutations = { copy = {}, bump = {} },
              handle = function(a) return { type = a.type } end,
              reduce = function(state, m)
                if m.type == "copy" then state.b = state.a else state.a.x = state.a.x + 1 end
                return state
              end,
            }
            """
        ])
        let feature = try h.load("alias")
        try h.send(["type": "copy"])
        try h.send(["type": "bump"])
        XCTAssertEqual(feature.state, ["a": ["x": 2], "b": ["x": 1]])
        XCTAssertEqual(try? feature.readStateTable(), ["a": ["x": 2], "b": ["x": 1]])
    }

    /// A table the plugin holds (an upvalue) and stores again in a later reduce, reached through
    /// the state in neither: its place from the first store went with the views let go in
    /// between (`fill` makes more than are kept), and it is still read whole and rebuilt, as a
    /// table in two places is.
    func testATableHeldOutsideAndStoredAgainLaterChangesOnItsOwnAfterwards() throws {
        let h = try Harness([
            "held/init.lua": """
            local mf = require "moonflow"
            local box = { x = 1 }
            return mf.feature {
              name = "held", initial = {},
              actions = { put = {}, fill = {}, alias = {}, bump = {} },
              mutations = { put = {}, fill = {}, alias = {}, bump = {} },
              handle = function(a) return { type = a.type } end,
              reduce = function(state, m)
                if m.type == "put" then state.a = box
                elseif m.type == "fill" then
                  state.many = {}
                  for i = 1, 300 do state.many[i] = { i = i } end
                elseif m.type == "alias" then state.b = box
                else state.a.x = state.a.x + 1 end
                return state
              end,
            }
            """
        ])
        let feature = try h.load("held")
        try h.send(["type": "put"])
        try h.send(["type": "fill"])
        try h.send(["type": "alias"])
        try h.send(["type": "bump"])
        XCTAssertEqual(feature.state["a"], ["x": 2])
        XCTAssertEqual(feature.state["b"], ["x": 1])
        XCTAssertEqual(try? feature.readStateTable()["b"], ["x": 1])
    }

    /// A table the plugin holds, stored again after the views were let go, where the reduces in
    /// between wrote nothing that makes the state be read whole (`touch` only reads, making
    /// more views than are kept): no view is left to say that it had a place before `alias`
    /// stored it again, so only `storedBefore` (dispatch.lua) tells that it is in two places
    /// then. Without it `bump` wrote `x` through `state.a` into the one table both places held:
    /// `b` read `x = 2` in Lua and `x = 1` in the snapshot.
    func testATableHeldOutsideIsReadWholeWhenStoredAgainAfterItsViewWent() throws {
        let h = try Harness([
            "held/init.lua": """
            local mf = require "moonflow"
            local box = { x = 1 }
            local many = {}
            for i = 1, 300 do many[i] = { i = i } end
            return mf.feature {
              name = "held", initial = { many = many },
              actions = { put = {}, touch = {}, alias = {}, bump = {} },
              mutations = { put = {}, touch = {}, alias = {}, bump = {} },
              handle = function(a) return { type = a.type } end,
              reduce = function(state, m)
                if m.type == "put" then state.a = box
                elseif m.type == "touch" then
                  for i = 1, #state.many do local _ = state.many[i].i end
                elseif m.type == "alias" then state.b = box
                else state.a.x = state.a.x + 1 end
                return state
              end,
            }
            """
        ])
        let feature = try h.load("held")
        for type in ["put", "touch", "alias", "touch", "bump"] { try h.send(["type": .string(LuaString(type))]) }
        XCTAssertEqual(try? feature.readStateTable()["b"], ["x": 1], "b changed with a in Lua")
        XCTAssertEqual(try? feature.readStateTable()["a"], ["x": 2])
        XCTAssertEqual(feature.state["a"], ["x": 2])
        XCTAssertEqual(feature.state["b"], ["x": 1])
    }

    /// Write views are let go once reduces have made 256: records added one per reduce cost the
    /// Lua heap little more than the same records in a plain table. Each record used to keep its
    /// view and five weak entries for as long as it was in the state: 2,000 of them took 776 KB,
    /// 1.8 times the plain table's 427 KB.
    func testRecordsAddedOnePerReduceKeepNoViewInLua() throws {
        let h = try Harness([
            "lines/init.lua": """
            local mf = require "moonflow"
            return mf.feature {
              name = "lines", initial = { lines = mf.array() },
              actions = { add = { sku = "string" } }, mutations = { added = { sku = "string" } },
              handle = function(a) return { type = "added", sku = a.sku } end,
              reduce = function(state, m)
                state.lines[#state.lines + 1] = { sku = m.sku, qty = 1, price = 100 }
                return state
              end,
            }
            """
        ])
        let count = 2_000
        func heap() -> Int {
            h.lua.collectGarbage()
            return h.lua.memoryInUse
        }
        // The same records in a plain table, made and let go first (so are their strings).
        let bare = heap()
        _ = try h.lua.run(
            string: """
                local lines = {}
                for i = 1, \(count) do lines[i] = { sku = "sku-" .. i, qty = 1, price = 100 } end
                PLAIN_LINES = { lines = lines }
                """, name: "=plain")
        let plain = heap() - bare
        _ = try h.lua.run(string: "PLAIN_LINES = nil", name: "=plain")
        try h.load("lines", observing: false)
        let empty = heap()
        for i in 1...count { try h.send(["type": "add", "sku": .string(LuaString("sku-\(i)"))]) }
        let grown = heap() - empty
        XCTAssertEqual(try h.feature.readStateTable()["lines"]?.tableValue?.array.count, count)
        XCTAssertLessThan(
            Double(grown), 1.75 * Double(plain), "\(count) records: \(grown) B of Lua heap, \(plain) B as a plain table"
        )
    }

    /// The snapshot's records share their keys: each record added by a reduce of its own is
    /// read in a read of its own, and every one copied its keys (four arrays of bytes, 192
    /// bytes a line of the 5,000-line cart's 4.3 MB snapshot); now one copy of each key serves
    /// them all (`SharedKeys`), in the state read whole too.
    func testRecordsAddedOnePerReduceShareTheirKeysInTheSnapshot() throws {
        let h = try Harness([
            "lines/init.lua": """
            local mf = require "moonflow"
            return mf.feature {
              name = "lines", initial = { lines = mf.array() },
              actions = { add = { sku = "string" } }, mutations = { added = { sku = "string" } },
              handle = function(a) return { type = "added", sku = a.sku } end,
              reduce = function(state, m)
                state.lines[#state.lines + 1] = { sku = m.sku, qty = 1, price = 100 }
                return state
              end,
            }
            """
        ])
        try h.load("lines")
        for i in 1...500 { try h.send(["type": "add", "sku": .string(LuaString("sku-\(i)"))]) }
        XCTAssertEqual(h.feature.state["lines"]?.tableValue?.array.count, 500)
        // `lines`, `sku`, `qty`, `price`: one storage each.
        XCTAssertEqual(SharedKeys.storageCount(in: h.feature.state), 4, "key copies in the snapshot")
        XCTAssertEqual(SharedKeys.storageCount(in: try h.feature.readStateTable()), 4, "key copies in a whole read")
    }
}

/// `value` as JSON with every object's keys sorted as strings (`{"5":1}` and `{[5]=1}` alike).
/// `value` with `new` at `path` (nil removes the key), tables copied on the way down.
private func setting(_ new: LuaValue, at path: ArraySlice<LuaValue>, in value: LuaValue) -> LuaValue {
    guard let key = path.first else { return new }
    var table: LuaTable
    if case .table(let t) = value { table = t } else { table = LuaTable() }
    let wasList = !table.isEmpty && table.count == table.array.count
    table[key] = setting(new, at: path.dropFirst(), in: table[key])
    // A list emptied by its last removal stays a list (`[]`), as the snapshot does.
    if table.isEmpty && wasList { table = LuaTable(isJSONArray: true) }
    return .table(table)
}

private func canonical(_ value: LuaValue?) -> String? {
    guard let json = try? value?.json(),
        let object = try? JSONSerialization.jsonObject(with: Data(json.utf8), options: .fragmentsAllowed),
        let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .fragmentsAllowed])
    else { return nil }
    return String(decoding: data, as: UTF8.self)
}

/// What a listener saw (listeners run on the host's state executor, one at a time).
private final class Seen: @unchecked Sendable {
    var previous: LuaValue
    var checked = 0
    var failures = 0
    var changes: [StateChange]?
    init(previous: LuaValue) { self.previous = previous }
}
