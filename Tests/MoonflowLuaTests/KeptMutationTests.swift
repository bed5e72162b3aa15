import LuaKit
import MoonflowLua
import XCTest

/// A mutation `handle` returns stays in Lua when the in-place check vouches for it.
/// The check must never accept what the full validation refuses, and a mutation kept
/// in Lua must reduce and report exactly as one copied into Swift.
final class KeptMutationTests: XCTestCase {
    static let declarations: LuaValue = [
        "add": ["n": "integer", "note": "string?"],
        "put": ["x": "number", "on": "boolean", "v": "any", "t": "table?"],
        "clear": [:],
    ]

    /// Tables of every sort: flat and valid, and each way of being wrong or not flat.
    static let tables = [
        #"{ type = "add", n = 1 }"#, #"{ type = "add", n = 1, note = "hi" }"#, #"{ type = "clear" }"#,
        #"{ type = "put", x = 1.5, on = true, v = "s" }"#, #"{ type = "put", x = 2, on = false, v = 3 }"#,
        #"{ type = "put", x = 2, on = false, v = 0.5, t = {} }"#, #"{ type = "put", x = 2, on = false, v = {} }"#,
        #"{ type = "add", n = 1.0 }"#, #"{ type = "add", n = "1" }"#, #"{ type = "add" }"#,
        #"{ type = "add", n = 1, extra = 2 }"#, #"{ type = "add", n = 1, [1] = "x" }"#,
        #"{ type = "add", n = 1, [true] = 1 }"#,
        #"{ type = "nope", n = 1 }"#, #"{ type = 3, n = 1 }"#, #"{ n = 1 }"#, #"{ "add", n = 1 }"#,
        #"{ type = "put", x = 0/0, on = true, v = 1 }"#, #"{ type = "put", x = 1, on = true, v = 0/0 }"#,
        #"{ type = "put", x = 1/0, on = true, v = -1/0 }"#, #"{ type = "put", x = 1, on = 1, v = 1 }"#,
        #"setmetatable({ type = "add", n = 1 }, {})"#, #"{ type = "add", n = 1, note = print }"#,
        #"{ type = "add", n = math.maxinteger }"#, #"{ type = "add", n = 1, note = "" }"#, "{}",
    ]

    func testTheInPlaceCheckNeverAcceptsWhatValidationRefuses() throws {
        let schema = try Schema(kind: "mutation", declaration: Self.declarations)
        let lua = try LuaState()
        lua.plainDataOnly = true
        var accepted = 0
        for source in Self.tables {
            let fn = try lua.load(string: "return " + source, name: "m")
            try lua.call(fn, []) { slots in
                let inPlace = slots.matches(1, schema.flat)
                let full: Bool = (try? schema.validate(try slots.value(1, path: "mutation"))) != nil
                if inPlace {
                    accepted += 1
                    XCTAssertTrue(full, "the in-place check accepted \(source), which validation refuses")
                }
                // Flat tables of scalars that validation accepts are vouched for in place.
                let flatAndValid = full && !source.contains("{}") && !source.contains("setmetatable")
                XCTAssertEqual(inPlace, flatAndValid, source)
            }
        }
        XCTAssertEqual(accepted, 7, "the flat valid tables are the fast path (infinities are refused like NaN)")
    }

    /// The feature's one-call step (dispatch.lua) checks a mutation with the same rules in C.
    func testTheCheckInCAnswersAsTheSwiftOneForEveryTable() throws {
        let schema = try Schema(kind: "mutation", declaration: Self.declarations)
        let lua = try LuaState()
        let flat = try lua.flatCheckFunction()
        let shapes = try lua.ref(.value(schema.flat.luaTable))
        let ask = try lua.load(string: "local flat, shapes, t = ... return flat(shapes, t)", name: "ask")
        var accepted = 0
        for source in Self.tables {
            let table = try lua.call(try lua.load(string: "return " + source, name: "m"), []) { try $0.ref(1) }
            let inSwift = try lua.call(try lua.load(string: "return ...", name: "id"), [.ref(table)]) {
                $0.matches(1, schema.flat)
            }
            let inC = try lua.call(ask, [.ref(flat), .ref(shapes), .ref(table)])
            XCTAssertEqual(inC, [.boolean(inSwift)], source)
            if inSwift { accepted += 1 }
        }
        XCTAssertEqual(accepted, 7)
        XCTAssertEqual(try lua.call(ask, [.ref(flat), .ref(shapes), .value("not a table")]), [false])
    }

    static let plugin = """
        local mf = require "moonflow"
        return mf.feature {
          name = "kept",
          initial = { log = {} },
          actions = { c = { n = "integer", ms = "integer?" }, other = { n = "integer" } },
          mutations = { add = { n = "integer", tag = "string" } },
          strategy = { c = "concat" },
          handle = function(a)
            if a.type == "c" and a.ms then return mf.timer(a.ms, { type = "add", n = a.n, tag = "timer" }) end
            return { type = "add", n = a.n, tag = a.type }
          end,
          reduce = function(s, m) s.log[#s.log + 1] = m.tag .. m.n; return s end,
        }
        """

    func testAMutationQueuedBehindAConcatStreamKeepsItsValueWhileLaterHandlersRun() throws {
        let h = try Harness(["kept/init.lua": Self.plugin])
        try h.load("kept")
        try h.send(["type": "c", "n": 1, "ms": 100])
        try h.send(["type": "c", "n": 2])  // queued behind the timer, its table kept in Lua
        try h.send(["type": "other", "n": 3])  // handled now: its table takes the slot
        h.advance(to: 200)
        XCTAssertEqual(h.state["log"], ["other3", "timer1", "c2"])
        XCTAssertEqual(h.log.mutations("tag"), ["0:other", "100:timer", "100:c"])
        XCTAssertEqual(h.log.mutations("n"), ["0:3", "100:1", "100:2"])
    }

    func testAStateOnlyListenerGetsTheSameStatesAndNoMutations() throws {
        let h = try Harness(["kept/init.lua": Self.plugin])
        let feature = try h.load("kept")
        let seen = Seen()
        let token = feature.outlet.add(kinds: .state) { seen.append($0) }
        defer { token.dispose() }
        for n in 1...5 { try h.send(["type": "other", "n": LuaValue.integer(Int64(n))]) }
        let states = seen.events.compactMap { if case .state(let s, _) = $0 { s["log"] } else { nil } }
        XCTAssertEqual(states.last, ["other1", "other2", "other3", "other4", "other5"])
        XCTAssertEqual(states.count, 5)
        XCTAssertEqual(seen.events.filter { $0.kind != .state }.count, 0)
        XCTAssertEqual(
            h.log.mutations("n"), ["0:1", "0:2", "0:3", "0:4", "0:5"],
            "a listener of every event still gets each mutation")
    }
}

private final class Seen: @unchecked Sendable {
    private let lock = NSLock()
    private var list: [FeatureEvent] = []
    func append(_ e: FeatureEvent) { lock.withLock { list.append(e) } }
    var events: [FeatureEvent] { lock.withLock { list } }
}
