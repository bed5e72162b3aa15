import LuaKit
import XCTest

private final class Tracker: @unchecked Sendable {
    nonisolated(unsafe) static var deinits = 0
    deinit { Tracker.deinits += 1 }
}

private struct Refused: Error, CustomStringConvertible {
    var description: String { "refused by Swift" }
}

final class SwiftFunctionTests: XCTestCase {
    func testSwiftFunctionGetsArgumentsAndReturnsValues() throws {
        let lua = try LuaState()
        try lua.setGlobal(
            "add",
            .function { args in
                [.value(.integer(try args.integer(1, function: "add") + args.integer(2, function: "add")))]
            })
        XCTAssertEqual(try lua.run(string: "return add(2, 40)", name: "t"), [42])
        XCTAssertThrowsError(try lua.run(string: "return add('x', 1)", name: "t.lua")) { error in
            XCTAssertEqual(
                (error as? LuaError)?.message, "t.lua:1: bad argument #1 to 'add' (integer expected, got string)")
        }
        // A float with an integral value counts as an integer (as in Lua); any other number,
        // a numeric string and a missing argument do not.
        XCTAssertEqual(try lua.run(string: "return add(2.0, 40)", name: "t"), [42])
        XCTAssertThrowsError(try lua.run(string: "return add(1, 2.5)", name: "t.lua")) { error in
            XCTAssertEqual(
                (error as? LuaError)?.message, "t.lua:1: bad argument #2 to 'add' (integer expected, got number)")
        }
        XCTAssertThrowsError(try lua.run(string: "return add(1, '2')", name: "t.lua")) { error in
            XCTAssertEqual(
                (error as? LuaError)?.message, "t.lua:1: bad argument #2 to 'add' (integer expected, got string)")
        }
        XCTAssertThrowsError(try lua.run(string: "return add(1)", name: "t.lua")) { error in
            XCTAssertEqual(
                (error as? LuaError)?.message, "t.lua:1: bad argument #2 to 'add' (integer expected, got no value)")
        }
    }

    func testThrowingFunctionIsCaughtByPcallAndLeaksNothing() throws {
        let lua = try LuaState()
        Tracker.deinits = 0
        try lua.setGlobal(
            "fail",
            .function { _ in
                let held = Tracker()
                withExtendedLifetime(held) {}
                throw Refused()
            })
        let out = try lua.run(
            string: """
                local caught, last = 0, nil
                for i = 1, 1000 do
                  local ok, err = pcall(function() fail() end)
                  if not ok then caught = caught + 1; last = err end
                end
                return caught, last
                """, name: "loop.lua")
        XCTAssertEqual(out[0], 1000)
        XCTAssertEqual(out[1], "loop.lua:3: refused by Swift")
        XCTAssertEqual(Tracker.deinits, 1000)
    }

    func testClosuresAreReleasedWhenLuaCollectsThem() throws {
        Tracker.deinits = 0
        do {
            let lua = try LuaState()
            for _ in 0..<100 {
                let held = Tracker()
                try lua.setGlobal(
                    "f",
                    .function { _ in
                        withExtendedLifetime(held) {}; return []
                    })
            }
            lua.collectGarbage()
            XCTAssertGreaterThanOrEqual(Tracker.deinits, 99, "replaced functions are collected")
            lua.close()
        }
        XCTAssertEqual(Tracker.deinits, 100, "closing the state releases the last one")
    }

    func testAPushThatRunsOutOfMemoryHalfwayReleasesEveryFunction() throws {
        // The push fails somewhere among the functions (making a closure, or growing the
        // registry for its ref), at a different one for each amount freed.
        try pushIntoFullMemory(releasing: 300, what: "a function") { _ in
            {
                (0..<300).map { _ in
                    let held = Tracker()
                    return .function { _ in
                        withExtendedLifetime(held) {}; return []
                    }
                }
            }
        }
    }

    func testAPushThatRunsOutOfMemoryHalfwayReleasesEveryObjectOnce() throws {
        // Swift objects among strings: the push fails at a different object or string for
        // each amount freed. The objects made into userdata before the failure are their
        // userdata's (released when Lua collects them); the rest are Swift's, and released
        // by it. Each must be released exactly once (twice would crash).
        try pushIntoFullMemory(releasing: 151, what: "an object") { lua in
            let cls = try lua.makeClass("Tracker", methods: [:])
            // makes the class metatable before memory fills; the ref is dropped at once
            _ = try lua.ref(.object(Tracker(), cls))
            return {
                (0..<150).flatMap { i -> [LuaPush] in
                    [.object(Tracker(), cls), .value(.string(LuaString("a string of some length, number \(i)")))]
                }
            }
        }
    }

    /// For each amount freed from 0 to 400: fills a state's memory to its last bytes, frees
    /// a little, pushes the values `setUp` (run before the fill) makes, then collects
    /// garbage and checks that `releasing` trackers were released. Some pushes must fail.
    private func pushIntoFullMemory(
        releasing expected: Int, what: String,
        _ setUp: (LuaState) throws -> () -> [LuaPush]
    ) throws {
        var failed = 0
        for freed in stride(from: 0, through: 400, by: 4) {
            Tracker.deinits = 0
            let lua = try LuaState(memoryLimit: 1 << 20)
            let sink = try lua.load(string: "return select('#', ...)", name: "sink")
            let make = try setUp(lua)
            _ = try lua.run(
                string: """
                    pcall(function() while true do hog = { hog } end end)
                    for _ = 1, \(freed) do hog = hog[1] end
                    collectgarbage()
                    """, name: "fill")
            do {
                let values = make()
                do { _ = try lua.call(sink, values) } catch { failed += 1 }
            }
            lua.collectGarbage()
            XCTAssertEqual(Tracker.deinits, expected, "\(freed) tables freed: \(what) is still held after the push")
            lua.close()
        }
        XCTAssertGreaterThan(failed, 0, "some pushes ran out of memory")
    }

    func testAPushRefusedHalfwayReleasesTheObjectsAndFunctionsBeforeIt() throws {
        // A value that cannot cross comes after a Swift object and a Swift function in the same
        // push: the push is refused before any of them reaches Lua, so Swift must let them go.
        final class Held {}
        let lua = try LuaState()
        let other = try LuaState()
        let sink = try lua.load(string: "return select('#', ...)", name: "sink")
        let cls = try lua.makeClass("Held", methods: [:])
        let refused: [(String, LuaPush)] = [
            ("a NaN key", .value(.table(LuaTable(hash: [.number(.nan): .integer(1)])))),
            (
                "a table nested too deep",
                .value(
                    (0...LuaState.maxDepth).reduce(LuaValue.integer(1)) { inner, _ in .table(LuaTable(array: [inner])) }
                )
            ),
            ("a ref from another state", .ref(try other.ref(.value(.table(LuaTable()))))),
        ]
        for (name, bad) in refused {
            weak var object: Held?
            weak var captured: Held?
            do {
                let held = Held(), inClosure = Held()
                object = held
                captured = inClosure
                XCTAssertThrowsError(
                    try lua.call(
                        sink,
                        [
                            .object(held, cls),
                            .function { _ in
                                withExtendedLifetime(inClosure) {}; return []
                            }, bad,
                        ]), name)
            }
            lua.collectGarbage()
            XCTAssertNil(object, "\(name): the object is still held after the refused push")
            XCTAssertNil(captured, "\(name): the function is still held after the refused push")
        }
        XCTAssertEqual(try lua.call(sink, [.function { _ in [] }, 1]), [2], "the state pushes as before")
    }

    func testRaiseAValue() throws {
        let lua = try LuaState()
        try lua.setGlobal("raise", .function { _ in throw LuaRaise(.value(["code": 7])) })
        XCTAssertEqual(try lua.run(string: "local ok, e = pcall(raise) return e.code", name: "t"), [7])
    }

    func testObjectsWithMethods() throws {
        final class Counter { var n: Int64 = 0 }
        let lua = try LuaState()
        let cls = try lua.makeClass(
            "Counter",
            methods: [
                "inc": { args in
                    guard let c = args.object(1, as: Counter.self) else { throw args.bad(1, "inc", "Counter") }
                    c.n += try args.integer(2, function: "inc")
                    return [.value(.integer(c.n))]
                }
            ])
        let counter = Counter()
        try lua.setGlobal("c", .object(counter, cls))
        XCTAssertEqual(try lua.run(string: "c:inc(2) return c:inc(3)", name: "t"), [5])
        XCTAssertEqual(counter.n, 5)
        XCTAssertThrowsError(try lua.run(string: "return c.inc({}, 1)", name: "t"))
        XCTAssertEqual(try lua.run(string: "return getmetatable(c)", name: "t"), [false], "the metatable is protected")
    }

    func testNestedCallsFromSwiftIntoLua() throws {
        let lua = try LuaState()
        try lua.run(string: "function double(x) return x * 2 end", name: "t")
        let double = try lua.ref(global: "double")
        // Unowned: the state holds the function, which must not hold the state.
        try lua.setGlobal(
            "viaSwift",
            .function { [unowned lua] args in
                let v = try args.value(1)
                return try lua.call(double, [.value(v)]).map { .value($0) }
            })
        XCTAssertEqual(try lua.run(string: "return viaSwift(21)", name: "t"), [42])
        let co = "local co = coroutine.wrap(function(x) return viaSwift(x) end) return co(5)"
        XCTAssertEqual(try lua.run(string: co, name: "t"), [10], "a call from inside a coroutine")
    }
}
