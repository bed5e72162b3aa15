import LuaKit
import MoonflowEvents
import MoonflowHost
import MoonflowLua
import XCTest

/// JSON Patch (RFC 6902) between states: the operations, their JSON, and applying them back.
final class JSONPatchTests: XCTestCase {
    func testAnOperationIsWrittenOpPathValueItsPathQuoted() throws {
        let op = JSONPatch.Operation(.replace, "/say \"hi\"/a~1b", ["z": 1, "a": "\n"])
        XCTAssertEqual(try op.json(), #"{"op":"replace","path":"/say \"hi\"/a~1b","value":{"a":"\n","z":1}}"#)
        XCTAssertEqual(
            try JSONPatch.json([JSONPatch.Operation(.remove, "/items/3"), op]),
            #"[{"op":"remove","path":"/items/3"},{"op":"replace","path":"/say \"hi\"/a~1b","value":{"a":"\n","z":1}}]"#)
        XCTAssertThrowsError(try JSONPatch.Operation(.add, "/x", ["n": .number(.nan)]).json()) { error in
            XCTAssertTrue("\(error)".contains("patch/x.n"), "\(error)")
        }
    }

    func testAOneFieldChangeOfALargeStateIsOneOperation() throws {
        let rows: [LuaValue] = (1...1000).map { ["id": .integer(Int64($0)), "name": "row \($0)"] }
        let old: LuaValue = ["rows": .table(LuaTable(array: rows)), "title": "t"]
        var changed = rows
        changed[499] = ["id": 500, "name": "renamed"]
        let new: LuaValue = ["rows": .table(LuaTable(array: changed)), "title": "t"]
        let ops = JSONPatch.diff(from: old, to: new)
        XCTAssertEqual(ops, [JSONPatch.Operation(.replace, "/rows/499/name", "renamed")])
        XCTAssertEqual(try JSONPatch.json(ops), #"[{"op":"replace","path":"/rows/499/name","value":"renamed"}]"#)
    }

    func testListsGrowAndShrinkAtTheEndAndKeysComeAndGo() throws {
        XCTAssertEqual(
            JSONPatch.diff(from: ["items": ["a"]], to: ["items": ["a", "b", "c"]]),
            [.init(.add, "/items/1", "b"), .init(.add, "/items/2", "c")])
        XCTAssertEqual(
            JSONPatch.diff(from: ["items": ["a", "b", "c"]], to: ["items": ["a"]]),
            [.init(.remove, "/items/2"), .init(.remove, "/items/1")])
        XCTAssertEqual(
            JSONPatch.diff(from: ["a": 1, "b/c": 2], to: ["a": 1, "d~": 3]),
            [.init(.remove, "/b~1c"), .init(.add, "/d~0", 3)])
        XCTAssertEqual(JSONPatch.diff(from: ["x": 1], to: ["x": ["y": 2]]), [.init(.replace, "/x", ["y": 2])])
        XCTAssertEqual(JSONPatch.diff(from: ["n": 1], to: ["n": 1]), [])
    }

    func testAReducesChangesGiveNoNullForANilAssignedAbsentKeyAndOneAddPerAppendedItem() throws {
        let new: LuaValue = ["messages": ["a", "b", "c", "d", "e", "f"], "title": "t"]
        let changes = [
            StateChange(path: ["error"], old: .nil, new: .nil),  // state.error = nil, no error there
            StateChange(path: ["messages", 4], old: .nil, new: "d"),
            StateChange(path: ["messages", 5], old: .nil, new: "e"),
            StateChange(path: ["messages", 6], old: .nil, new: "f"),
        ]
        XCTAssertEqual(
            JSONPatch.patch(from: nil, to: new, changes: changes),
            [.init(.add, "/messages/3", "d"), .init(.add, "/messages/4", "e"), .init(.add, "/messages/5", "f")])
        // Popped from the end, last first; a list that got a name is replaced whole (it is an object now).
        let popped: LuaValue = ["messages": ["a"]]
        XCTAssertEqual(
            JSONPatch.patch(
                from: nil, to: popped,
                changes: [
                    StateChange(path: ["messages", 2], old: "b", new: .nil),
                    StateChange(path: ["messages", 3], old: "c", new: .nil),
                ]), [.init(.remove, "/messages/2"), .init(.remove, "/messages/1")])
        let named: LuaValue = ["list": .table(LuaTable(array: ["a"], hash: ["name": "x"]))]
        XCTAssertEqual(
            JSONPatch.patch(from: nil, to: named, changes: [StateChange(path: ["list", "name"], old: .nil, new: "x")]),
            [.init(.replace, "/list", named["list"]!)])
    }

    /// The first item written into a declared list that was empty is an `add`: the list was
    /// `[]`. Without a declaration the empty table may have been `{}`, so the list is replaced.
    func testTheFirstItemOfADeclaredEmptyListIsAnAdd() throws {
        let new: LuaValue = ["cart": ["lines": [["sku": "tea"]]]]
        let changes = [StateChange(path: ["cart", "lines", 1], old: .nil, new: ["sku": "tea"])]
        let declared = SchemaType.record([
            .init(
                name: "cart",
                type: .record([.init(name: "lines", type: .list(.record([.init(name: "sku", type: .scalar(.string))])))]
                ))
        ])
        XCTAssertEqual(
            JSONPatch.patch(from: nil, to: new, changes: changes, declared: declared),
            [.init(.add, "/cart/lines/0", ["sku": "tea"])])
        XCTAssertEqual(
            JSONPatch.patch(from: nil, to: new, changes: changes),
            [.init(.replace, "/cart/lines", new["cart"]!["lines"]!)])
        let before: LuaValue = ["cart": ["lines": .table(LuaTable(isJSONArray: true))]]
        XCTAssertEqual(
            JSONPatch.apply(
                try XCTUnwrap(JSONPatch.patch(from: nil, to: new, changes: changes, declared: declared)), to: before),
            new)
    }

    func testApplyingTheDiffGivesTheNewStateForRandomStates() throws {
        var generator = SystemRandomNumberGenerator()
        for round in 0..<300 {
            let a = randomValue(depth: 3, using: &generator)
            let b = randomValue(depth: 3, using: &generator)
            let ops = JSONPatch.diff(from: a, to: b)
            let applied = try XCTUnwrap(JSONPatch.apply(ops, to: a), "round \(round): \(ops)")
            XCTAssertEqual(try applied.json(), try b.json(), "round \(round): \(a) -> \(b) with \(ops)")
        }
    }

    func testAPatchThatDoesNotFitIsRefused() {
        XCTAssertNil(JSONPatch.apply([.init(.remove, "/missing")], to: ["a": 1]))
        XCTAssertNil(JSONPatch.apply([.init(.add, "/items/5", 1)], to: ["items": ["a"]]))
    }

    private func randomValue(depth: Int, using g: inout SystemRandomNumberGenerator) -> LuaValue {
        switch Int.random(in: 0..<(depth > 0 ? 6 : 4), using: &g) {
        case 0: return .integer(Int64.random(in: 0..<4, using: &g))
        case 1: return .string(LuaString(["a", "b", "c"].randomElement(using: &g)!))
        case 2: return .boolean(Bool.random(using: &g))
        case 3: return .number(Double(Int.random(in: 0..<3, using: &g)) + 0.5)
        case 4:
            let n = Int.random(in: 0..<4, using: &g)
            return .table(
                LuaTable(array: (0..<n).map { _ in randomValue(depth: depth - 1, using: &g) }, isJSONArray: true))
        default:
            var t = LuaTable()
            for key in ["x", "y", "z"] where Bool.random(using: &g) {
                t[key] = randomValue(depth: depth - 1, using: &g)
            }
            return .table(t)
        }
    }
}
