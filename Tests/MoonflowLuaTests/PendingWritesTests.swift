import Foundation
import LuaKit
import MoonflowLua
import XCTest

/// While no one listens for state events, a reduce that wrote only plain scalars the
/// declared state takes leaves its writes in Lua, and the snapshot takes them when the
/// drain runs out of work or when the state is read. None of that may show: the state
/// read is always every reduce so far, a refused reduce loses nothing that waited, and
/// the declared state's rules hold as when every state is published.
final class PendingWritesTests: XCTestCase {
    func testUnobservedTheStateStillFollowsEveryKindOfWriteExactly() throws {
        let h = try Harness(["writes/init.lua": StateWritesTests.plugin])
        let feature = try h.load("writes", observing: false)
        // Read in the middle of a drain (a rolled-back reduce), with writes waiting.
        let failures = Counter()
        let observation = feature.outlet.add(kinds: .error) { _ in
            failures.n += 1
            XCTAssertEqual(
                feature.state.description, try? feature.readStateTable().description, "read after a rollback, mid-drain"
            )
        }
        defer { observation.dispose() }
        var seed = 1
        var batch = 1
        while seed <= 900 {
            // Batches of 1 to 23 actions in one drain: writes wait across actions.
            for _ in 0..<batch {
                try feature.send(["type": "step", "seed": .integer(Int64(seed * 7919))])
                seed += 1
            }
            h.settle()
            XCTAssertEqual(
                feature.state.description, try feature.readStateTable().description, "after seed \(seed - 1)")
            XCTAssertEqual(
                String(decoding: try feature.stateJSON(), as: UTF8.self), try feature.state.json(),
                "JSON after seed \(seed - 1)")
            batch = batch % 23 + 1
        }
        XCTAssertGreaterThan(failures.n, 10)
    }

    static let typed = """
        local mf = require "moonflow"
        return mf.feature {
          name = "typed",
          initial = { count = 0, ratio = 1.5, label = "a", mode = "idle", tags = { "x" }, byName = { a = 1 } },
          state = {
            count = "integer", ratio = "number", label = "string", mode = { "enum", "idle", "busy" },
            tags = { "list", of = "string" }, byName = { "map", of = "integer" },
          },
          actions = { set = { field = "string", value = "any", throw = "boolean?", key = "any?" } },
          mutations = { set = { field = "string", value = "any", throw = "boolean?", key = "any?" } },
          handle = function(a) return { type = "set", field = a.field, value = a.value, throw = a.throw, key = a.key } end,
          reduce = function(state, m)
            local v = m.value
            if v == "nan" then v = 0 / 0 end
            if m.key ~= nil then state[m.field][m.key] = v else state[m.field] = v end
            if m.throw then return state, { type = 5 } end   -- an effect Swift refuses: rolled back
            return state
          end,
        }
        """

    func testTheDeclaredStateRefusesWhatItRefusedAndWhatWaitedStays() throws {
        let h = try Harness(["typed/init.lua": Self.typed])
        let feature = try h.load("typed", observing: false)
        let errors = Messages()
        let observation = feature.outlet.add(kinds: .error) { event in
            if case .error(let message, _) = event { errors.list.append(message) }
        }
        defer { observation.dispose() }
        func set(_ field: String, _ value: LuaValue, key: LuaValue = .nil, throwing: Bool = false) throws {
            var action: LuaValue = ["type": "set", "field": .string(LuaString(field)), "value": value]
            if throwing { action["throw"] = true }
            if key != .nil { action["key"] = key }
            try feature.send(action)
        }
        // One drain: the good writes wait in Lua, the others are refused in between.
        try set("count", 1)
        try set("count", 2)
        try set("count", 99, throwing: true)  // written, then refused: count stays 2
        try set("count", "three")  // not an integer
        try set("count", 2.5)  // not an integer either
        try set("ratio", 4)  // an integer is a number
        try set("ratio", "nan")  // NaN cannot cross
        try set("mode", "busy")
        try set("mode", "sleeping")  // not one of the enum's names
        try set("label", true)  // not a string
        try set("tags", "y", key: 2)
        try set("tags", "z", key: "k")  // a list's keys are 1, 2, 3...
        try set("byName", 7, key: "b")
        try set("byName", "seven", key: "c")  // a map of integers
        try set("label", "b")
        h.settle()
        let expected: LuaValue = [
            "count": 2, "ratio": 4, "label": "b", "mode": "busy", "tags": ["x", "y"], "byName": ["a": 1, "b": 7],
        ]
        XCTAssertEqual(feature.state, expected)
        XCTAssertEqual(try feature.readStateTable(), expected)
        XCTAssertEqual(errors.list.count, 8, "\(errors.list)")
        XCTAssertTrue(errors.list.contains { $0.contains("state.count must be an integer") }, "\(errors.list)")
        XCTAssertTrue(
            errors.list.contains { $0.contains("state.mode must be one of \"idle\", \"busy\"") }, "\(errors.list)")
        XCTAssertTrue(
            errors.list.contains { $0.contains("state.tags is a list: its keys are 1, 2, 3") }, "\(errors.list)")
        XCTAssertTrue(errors.list.contains { $0.contains("state.byName.c must be an integer") }, "\(errors.list)")
    }

    /// A listener that reads the state while a reduce runs (a warning the reduce logs)
    /// sees every reduce before it, those whose writes wait in Lua too, and none of the
    /// running one's writes.
    func testAReadDuringAReduceSeesTheReducesBeforeIt() throws {
        let h = try Harness([
            "peek/init.lua": """
            local mf = require "moonflow"
            return mf.feature {
              name = "peek", initial = { count = 0 },
              actions = { add = { n = "integer", peek = "boolean?" } },
              mutations = { add = { n = "integer", peek = "boolean?" } },
              handle = function(a) return { type = "add", n = a.n, peek = a.peek } end,
              reduce = function(state, m)
                state.count = state.count + m.n
                if m.peek then local _ = state.notDeclared end   -- logs a warning, once
                return state
              end,
            }
            """
        ])
        let feature = try h.load("peek", observing: false)
        let seen = Messages()
        let observation = feature.outlet.add(kinds: .log) { _ in
            seen.list.append(feature.state["count"]?.description ?? "nil")
        }
        defer { observation.dispose() }
        try feature.send(["type": "add", "n": 1])
        try feature.send(["type": "add", "n": 2])
        try feature.send(["type": "add", "n": 4, "peek": true])
        h.settle()
        XCTAssertEqual(seen.list, ["3"])
        XCTAssertEqual(feature.state, ["count": 7])
    }

    /// Writes that waited are in the snapshot once the drain ends, read or not: a state
    /// listener that comes after is told only of what changes from then on.
    func testTheSnapshotTakesWhatWaitedWhenTheDrainEnds() throws {
        let h = try Harness([
            "late/init.lua": """
            local mf = require "moonflow"
            return mf.feature {
              name = "late", initial = { a = 0, b = 0 },
              actions = { a = {}, b = {} }, mutations = { a = {}, b = {} },
              handle = function(x) return { type = x.type } end,
              reduce = function(state, m) state[m.type] = state[m.type] + 1; return state end,
            }
            """
        ])
        let feature = try h.load("late", observing: false)
        let delivered = Messages()
        try feature.send(["type": "a"])
        try feature.send(["type": "a"])
        h.settle()
        let observation = feature.outlet.add(kinds: .state) { event in
            guard case .state(let state, _) = event, let changes = feature.deliveredChanges else { return }
            delivered.list.append(
                "\(state["a"]!) \(state["b"]!) " + changes.map { "\($0.path)=\($0.new)" }.joined(separator: ","))
        }
        defer { observation.dispose() }
        try feature.send(["type": "b"])
        h.settle()
        XCTAssertEqual(delivered.list, ["2 1 [\"b\"]=1"])
    }
}

private final class Counter: @unchecked Sendable { var n = 0 }
private final class Messages: @unchecked Sendable { var list: [String] = [] }
