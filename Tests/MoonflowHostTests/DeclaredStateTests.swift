import Foundation
import LuaKit
import MoonflowHost
import MoonflowHostTools
import MoonflowLua
import PluginFixtures
import XCTest

/// A declared `state`: checked after every reduce (a wrong type is refused and rolled back,
/// naming the path), `initial` checked at load, and strict access (a field the declaration
/// lacks fails where it is read or written, with a did-you-mean). Without a declaration the
/// state inferred from `initial` only warns, once per site.
final class DeclaredStateTests: XCTestCase {
    /// A feed: `handle` and `reduce` take a Lua snippet per action, so each test says what it does.
    static func feed(
        state: String? = """
        { items = { "list", of = { id = "integer", text = "string" } }, hasMore = "boolean",
          error = "string?", mode = { "enum", "idle", "busy" }, tags = { "map", of = "integer" }, extra = "table?" }
        """, initial: String = #"{ items = {}, hasMore = true, mode = "idle", tags = {} }"#,
        handle: String = "return { type = a.type }", reduce: String
    ) -> String {
        """
        local mf = require "moonflow"
        return mf.feature {
          name = "feed",
          initial = \(initial),
          \(state.map { "state = \($0)," } ?? "")
          actions = { go = {}, again = {} },
          mutations = { go = {}, again = {} },
          handle = function(a, state)
            \(handle)
          end,
          reduce = function(state, m)
            \(reduce)
            return state
          end,
        }
        """
    }

    private func loaded(_ source: String, timeLimitMs: Int64 = 1000) throws -> Harness {
        let h = try Harness(["feed/init.lua": source], timeLimitMs: timeLimitMs)
        try h.load("feed")
        return h
    }

    func testAWrongTypeWrittenInReduceIsRefusedNamingThePathAndRolledBack() throws {
        let h = try loaded(
            Self.feed(
                reduce: """
                    if m.type == "go" then state.items[1] = { id = 1, text = "a" } return state end
                    state.hasMore = false
                    state.items[1].text = 7
                    """))
        try h.running.send(["type": "go"])
        try h.running.send(["type": "again"])
        h.settle()
        let errors = h.log.errors.map(\.message)
        XCTAssertEqual(errors.count, 1, "\(errors)")
        XCTAssertTrue(
            errors.first?.contains("state.items[1].text must be a string (got integer 7)") == true, "\(errors)")
        // Rolled back: hasMore, written before the bad write in the same reduce, is true still, in Swift and in Lua.
        XCTAssertEqual(h.running.state["hasMore"], .boolean(true))
        XCTAssertEqual(h.running.state["items"]?[0]?["text"], "a")
        let states = h.log.timedEvents.filter { if case .state = $0.event { true } else { false } }
        XCTAssertEqual(states.count, 2, "no state event for the refused reduce")
    }

    func testEveryKindOfTypeIsCheckedAfterReduce() throws {
        let cases: [(String, String)] = [
            (#"state.mode = "sleeping""#, #"state.mode must be one of "idle", "busy" (got string "sleeping")"#),
            (#"state.tags.a = "x""#, #"state.tags.a must be an integer (got string "x")"#),
            ("state.items = { 1 }", "state.items[1] must be a record (got integer 1)"),
            ("state.items = { a = 1 }", #"state.items must be a list, with items 1 to n only (got key "a")"#),
            ("state.hasMore = nil", "state.hasMore is missing (boolean)"),
            ("state.error = math.huge", "state.error: infinity (math.huge) cannot be copied out of Lua"),
            ("state.items[1] = { id = 1, text = \"a\", done = true }", "state.items[1] has no field 'done'"),
            // A table the reducer returns in place of the state is checked whole.
            (
                #"do return { items = {}, hasMore = 1, mode = "idle", tags = {} } end"#,
                "state.hasMore must be a boolean (got integer 1)"
            ),
        ]
        for (write, expected) in cases {
            let h = try loaded(Self.feed(reduce: write))
            let before = h.running.state
            try h.running.send(["type": "go"])
            h.settle()
            let errors = h.log.errors.map(\.message)
            XCTAssertTrue(errors.count == 1 && errors[0].contains(expected), "\(write): \(errors)")
            XCTAssertEqual(h.running.state, before, write)
        }
    }

    func testWritesThatFitPass_RemovingListItemsAndOptionalFieldsToo() throws {
        let h = try loaded(
            Self.feed(
                reduce: """
                    if m.type == "go" then
                      state.items[1] = { id = 1, text = "a" }; state.items[2] = { id = 2, text = "b" }
                      state.tags.x = 3; state.error = "oops"; state.mode = "busy"; state.extra = { anything = { 1, "x" } }
                    else
                      state.items[2] = nil; state.tags.x = nil; state.error = nil; state.extra.anything = nil
                    end
                    """))
        try h.running.send(["type": "go"])
        try h.running.send(["type": "again"])
        h.settle()
        XCTAssertEqual(h.log.errors.map(\.message), [])
        XCTAssertEqual(h.running.state["items"]?[0]?["text"], "a")
        XCTAssertNil(h.running.state["items"]?[1])
        XCTAssertEqual(h.running.state["mode"], "busy")
    }

    /// An enum's values are a set: 50,000 of them load (checking the declaration for
    /// repeats compared every pair: 16,000 tripped the load limit) and a write is one
    /// lookup. Values are compared by their bytes: `"\xff"` and `"\xfe"` are two values
    /// (both read as U+FFFD before, "listed twice"). A message names the first ten.
    func testALargeEnumLoadsAndItsValuesAreComparedByBytes() throws {
        let declaration =
            #"{ mode = (function() local e = { "enum" } for i = 1, 50000 do e[#e + 1] = "v" .. i end e[#e + 1] = "\xff" e[#e + 1] = "\xfe" return e end)() }"#
        // Building and checking 50,000 names is real work: under ThreadSanitizer on a loaded
        // 2-core box it took over the default 1 s of CPU, so this load gets 10 s.
        let h = try loaded(
            Self.feed(
                state: declaration, initial: #"{ mode = "v1" }"#,
                reduce: #"""
                    if m.type == "go" then state.mode = (state.mode == "v1") and "v50000" or "\xfe" else state.mode = "\xfd" end
                    """#), timeLimitMs: 10_000)
        try h.running.send(["type": "go"])
        h.settle()
        XCTAssertEqual(h.running.state["mode"], "v50000")
        try h.running.send(["type": "go"])
        try h.running.send(["type": "again"])
        h.settle()
        XCTAssertEqual(h.running.state["mode"], .string(LuaString(bytes: [0xFE])))
        let errors = h.log.errors.map(\.message)
        XCTAssertEqual(errors.count, 1, "\(errors)")
        XCTAssertTrue(
            errors.first?.contains(
                #"state.mode must be one of "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10" and 49992 more (got string"#
            ) == true, "\(errors)")
    }

    func testInitialIsCheckedAtLoad() throws {
        let h = try Harness([
            "feed/init.lua": Self.feed(
                initial: #"{ items = {}, hasMore = "yes", mode = "idle", tags = {} }"#, reduce: "")
        ])
        XCTAssertThrowsError(try h.host.load("feed")) { error in
            XCTAssertTrue("\(error)".contains("initial.hasMore must be a boolean (got string \"yes\")"), "\(error)")
        }
    }

    func testABadDeclarationIsNamedWithItsFix() throws {
        let bad: [(String, String)] = [
            (#"{ count = "int" }"#, #"state.count: unknown type "int" (did you mean "integer"?"#),
            (#"{ items = { "lsit", of = "string" } }"#, #"unknown composite type "lsit" (did you mean "list"?"#),
            (#"{ items = { "list" } }"#, #"needs the type of its items"#),
            (#"{ mode = { "enum" } }"#, "an enum needs at least one value"),
            // Built in Lua: `types --lua` wrote it back as Lua no parser takes (too many registers).
            (
                #"(function() local t = "integer" for _ = 1, 100 do t = { "list", of = t } end return { deep = t } end)()"#,
                "a type nested more than 64 levels deep (lists, maps and records inside each other); flatten it"
            ),
        ]
        for (declaration, expected) in bad {
            let h = try Harness(["feed/init.lua": Self.feed(state: declaration, initial: "{}", reduce: "")])
            XCTAssertThrowsError(try h.host.load("feed"), declaration) { error in
                XCTAssertTrue("\(error)".contains(expected), "\(declaration): \(error)")
            }
        }
    }

    func testATypoReadInHandleFailsAtItsLineWithDidYouMean() throws {
        let h = try loaded(
            Self.feed(
                handle: """
                    if state.hasMroe then return { type = "go" } end
                    """, reduce: ""))
        try h.running.send(["type": "go"])
        h.settle()
        let error = h.log.errors.first
        XCTAssertEqual(error?.location, "feed/init.lua:10")
        XCTAssertTrue(
            error?.message.contains("state has no field 'hasMroe' (did you mean 'hasMore'?)") == true,
            "\(String(describing: error))")
    }

    func testATypoInsideANestedRecordNamesItsPath() throws {
        let h = try loaded(
            Self.feed(
                handle: """
                    if a.type == "go" then return { type = "go" } end
                    local _ = state.items[1].txet
                    """, reduce: #"state.items[1] = { id = 1, text = "a" }"#))
        try h.running.send(["type": "go"])
        try h.running.send(["type": "again"])
        h.settle()
        XCTAssertTrue(
            h.log.errors.first?.message.contains("state.items[1] has no field 'txet' (did you mean 'text'?)") == true,
            "\(h.log.errors)")
    }

    func testATypoWrittenOrReadInReduceFailsAtItsLineAndWritesNothing() throws {
        for (body, line, field) in [
            ("state.hasMroe = false", 13, "hasMroe"), ("state.hasMore = state.hsaMore", 13, "hsaMore"),
        ] {
            let h = try loaded(Self.feed(reduce: body))
            try h.running.send(["type": "go"])
            h.settle()
            let error = h.log.errors.first
            XCTAssertEqual(error?.location, "feed/init.lua:\(line)", body)
            XCTAssertTrue(
                error?.message.contains("state has no field '\(field)'") == true,
                "\(body): \(String(describing: error))")
            XCTAssertEqual(h.running.state["hasMore"], .boolean(true))
        }
    }

    func testDeclaredOptionalFieldsReadAsNilWithoutComplaint() throws {
        let h = try loaded(
            Self.feed(
                handle: """
                    if state.error == nil and state.extra == nil and state.tags.nothing == nil and state.items[5] == nil then
                      return { type = "go" }
                    end
                    """, reduce: "state.hasMore = false"))
        try h.running.send(["type": "go"])
        h.settle()
        XCTAssertEqual(h.log.errors.map(\.message), [])
        XCTAssertEqual(h.running.state["hasMore"], .boolean(false))
    }

    func testWithoutADeclarationAnUnknownReadWarnsOncePerSiteAndRunsOn() throws {
        let h = try loaded(
            Self.feed(
                state: nil, initial: "{ hasMore = true, n = 0 }",
                handle: """
                    if state.hasMroe then return end
                    return { type = "go" }
                    """, reduce: "state.n = state.n + 1; state.added = true"))
        for _ in 0..<3 { try h.running.send(["type": "go"]) }
        h.settle()
        XCTAssertEqual(h.log.errors.map(\.message), [])
        XCTAssertEqual(h.running.state["n"], .integer(3))
        let logs = h.log.timedEvents.compactMap { if case .log(let m, let at) = $0.event { (m, at) } else { nil } }
        XCTAssertEqual(logs.count, 1, "\(logs)")
        XCTAssertEqual(logs.first?.1, "feed/init.lua:9")
        XCTAssertTrue(
            logs.first?.0.contains("state has no field 'hasMroe' (did you mean 'hasMore'?)") == true, "\(logs)")
    }

    func testAComposesDeclaredStateHoldsWhatCombineMakes() throws {
        let child = Self.feed(state: #"{ n = "integer" }"#, initial: "{ n = 0 }", reduce: "state.n = state.n + 1")
        func compose(_ combine: String) -> String {
            """
            local mf = require "moonflow"
            return mf.compose {
              name = "parent",
              state = { total = "integer" },
              children = { feed = "feed" },
              route = function(a) return "feed", a end,
              combine = function(s) return \(combine) end,
            }
            """
        }
        let good = try Harness(["feed/init.lua": child, "parent/init.lua": compose("{ total = s.feed.n }")])
        try good.load("parent")
        try good.running.send(["type": "go"])
        good.settle()
        XCTAssertEqual(good.running.state, ["total": 1])

        let bad = try Harness([
            "feed/init.lua": child, "parent/init.lua": compose(#"{ total = s.feed.n > 0 and "many" or 0 }"#),
        ])
        try bad.load("parent")
        try bad.running.send(["type": "go"])
        bad.settle()
        XCTAssertEqual(bad.running.state, ["total": 0], "the misfit is refused: the parent's state stays")
        XCTAssertTrue(
            bad.log.errors.contains { $0.message.contains(#"state.total must be an integer (got string "many")"#) },
            "\(bad.log.errors)")
    }

    func testAnOutwardEffectMeetsTheDeclaredOutputs() throws {
        func feature(_ effect: String) -> String {
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "feed",
              initial = { n = 0 },
              state = { n = "integer" },
              actions = { go = {} },
              mutations = { go = {} },
              outputs = { milestone = { count = "integer" } },
              effects = { inside = function() end },
              handle = function(a) return { type = "go" } end,
              reduce = function(state, m)
                state.n = state.n + 1
                return state, \(effect)
              end,
            }
            """
        }
        let good = try loaded(feature(#"{ type = "milestone", count = state.n }"#))
        let effects = good.log.timedEvents.compactMap { if case .effect(let e, _) = $0.event { e } else { nil } }
        try good.running.send(["type": "go"])
        good.settle()
        XCTAssertEqual(
            good.log.timedEvents.compactMap { if case .effect(let e, _) = $0.event { e } else { nil } }.count,
            effects.count + 1)
        // An internal effect is not an output: its handler takes it.
        let inside = try loaded(feature(#"{ type = "inside" }"#))
        try inside.running.send(["type": "go"])
        inside.settle()
        XCTAssertEqual(inside.log.errors.map(\.message), [])

        for (effect, expected) in [
            (
                #"{ type = "milestoen", count = 1 }"#,
                "undeclared effect 'milestoen'; declared effects: milestone. Add it to the feature's `outputs` table"
            ),
            (#"{ type = "milestone", count = "x" }"#, "effect 'milestone': field 'count' must be an integer"),
        ] {
            let bad = try loaded(feature(effect))
            try bad.running.send(["type": "go"])
            bad.settle()
            XCTAssertTrue(bad.log.errors.first?.message.contains(expected) == true, "\(effect): \(bad.log.errors)")
            XCTAssertEqual(bad.running.state["n"], .integer(0), "the reduce that made it is rolled back")
        }
    }
}
