import Foundation
import LuaKit
import PluginFixtures
import MoonflowHost
import MoonflowHostTools
import MoonflowLua
import XCTest

/// Effects returned by `reduce` (handled inside by type, or going out), and services from
/// Swift (plain, async, `Codable`) and from Lua (`services = { ... }`).
final class EffectAndServiceTests: XCTestCase {
    /// `t:await` of a Swift service inside an `mf.task`.
    func testAwaitOfASwiftService() throws {
        let h = try Harness([
            "probe/init.lua": Probe.source(
                """
                return mf.task(function(t)
                  local ok, v = t:await(mf.timer(50):flatMap(function() return env.services.double(21) end))
                  t:emit(v)
                  local ok2, err = t:await(env.services.double("x"))
                  t:emit(tostring(ok2) .. " " .. err)
                end)
                """)
        ])
        h.host.register(service: "double") { args in
            try await Task.sleep(nanoseconds: 2_000_000)
            guard let n = args.first?.intValue else { throw ServiceFailure("double needs an integer") }
            return .integer(n * 2)
        }
        try h.load()
        try h.send(["type": "go"])
        h.advance(to: 200)
        XCTAssertEqual(h.log.values, ["50:42", "50:false service 'double' failed: double needs an integer", "50:|"])
    }

    static let effectsPlugin = """
        local mf = require "moonflow"
        return mf.feature {
          name = "fx",
          initial = { title = "", loading = false },
          actions = { open = { id = "integer" }, ping = {} },
          mutations = { opening = { id = "integer" }, loaded = { id = "integer", title = "string" }, pinged = {} },
          effects = {
            fetch = function(effect, state, env)
              return mf.timer(100, { type = "loaded", id = effect.id, title = "T" .. effect.id .. (state.loading and " (was loading)" or "") })
            end,
          },
          handle = function(action)
            if action.type == "open" then return { type = "opening", id = action.id } end
            return { type = "pinged" }
          end,
          reduce = function(state, m)
            if m.type == "opening" then
              state.loading = true
              return state, { type = "fetch", id = m.id }
            elseif m.type == "loaded" then
              state.title, state.loading = m.title, false
              return state, { type = "notify", title = m.title }
            end
            return state, { type = "beep" }
          end,
        }
        """

    func testAnInternalEffectFeedsMutationsBackAndAnUnhandledOneGoesOut() throws {
        let h = try Harness(["fx/init.lua": Self.effectsPlugin])
        try h.load("fx")
        try h.send(["type": "open", "id": 7])
        try h.send(["type": "ping"], at: 30)
        h.advance(to: 500)
        XCTAssertEqual(
            h.log.lines,
            [
                #"0 state#0 {"loading":false,"title":""}"#,
                #"0 action {"id":7,"type":"open"}"#,
                #"0 mutation#1 {"id":7,"type":"opening"}"#,
                #"0 state#1 {"loading":true,"title":""}"#,
                // The handled effect stays inside, and is seen: what its handler sends follows it.
                #"0 internal {"id":7,"type":"fetch"}"#,
                #"30 action {"type":"ping"}"#,
                #"30 mutation#2 {"type":"pinged"}"#,
                #"30 state#2 {"loading":true,"title":""}"#,
                #"30 effect {"type":"beep"}"#,
                #"100 mutation#3 {"id":7,"title":"T7 (was loading)","type":"loaded"}"#,
                #"100 state#3 {"loading":false,"title":"T7 (was loading)"}"#,
                #"100 effect {"title":"T7 (was loading)","type":"notify"}"#,
            ])
    }

    /// `reduce` may return a list of effects: each is routed in order, as if returned alone
    /// (a handled one starts its stream, the others go out), an empty list is no effect, and
    /// an item that does not fit the declared `outputs` is named by its place and rolls the
    /// reduce back.
    func testReduceMayReturnAListOfEffects() throws {
        func plugin(_ effects: String) -> String {
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "many",
              initial = { n = 0 },
              actions = { go = {} },
              mutations = { go = {}, fetched = {} },
              outputs = { saved = { n = "integer" }, toast = { text = "string" } },
              effects = { fetch = function() return mf.timer(10, { type = "fetched" }) end },
              handle = function(a) return { type = "go" } end,
              reduce = function(state, m)
                state.n = state.n + 1
                if m.type == "fetched" then return state end
                return state, \(effects)
              end,
            }
            """
        }
        let h = try Harness([
            "many/init.lua": plugin(
                #"{ { type = "saved", n = state.n }, { type = "fetch" }, { type = "toast", text = "hi" } }"#)
        ])
        try h.load("many")
        try h.send(["type": "go"])
        h.advance(to: 50)
        XCTAssertEqual(
            h.log.lines,
            [
                #"0 state#0 {"n":0}"#,
                #"0 action {"type":"go"}"#,
                #"0 mutation#1 {"type":"go"}"#,
                #"0 state#1 {"n":1}"#,
                #"0 effect {"n":1,"type":"saved"}"#,
                #"0 internal {"type":"fetch"}"#,
                #"0 effect {"text":"hi","type":"toast"}"#,
                #"10 mutation#2 {"type":"fetched"}"#,
                #"10 state#2 {"n":2}"#,
            ])

        let empty = try Harness(["many/init.lua": plugin("{}")])
        try empty.load("many")
        try empty.send(["type": "go"])
        empty.advance(to: 50)
        XCTAssertFalse(empty.log.lines.contains { $0.contains(" effect {") }, "\(empty.log.lines)")
        XCTAssertEqual(empty.log.errors.map(\.message), [])

        for (effects, expected) in [
            (
                #"{ { type = "saved", n = 1 }, { type = "toats", text = "hi" } }"#,
                "effect 2 of the list reduce returned: undeclared effect 'toats'"
            ),
            (
                #"{ { type = "saved", n = 1 }, "saved" }"#,
                "effect 2 of the list reduce returned must be a table with a string 'type'"
            ),
        ] {
            let bad = try Harness(["many/init.lua": plugin(effects)])
            try bad.load("many")
            try bad.send(["type": "go"])
            bad.advance(to: 50)
            XCTAssertTrue(bad.log.errors.first?.message.contains(expected) == true, "\(effects): \(bad.log.errors)")
            XCTAssertFalse(
                bad.log.lines.contains { $0.contains(" effect {") },
                "no effect of a refused list goes out: \(bad.log.lines)")
            XCTAssertFalse(
                bad.log.lines.contains { $0.contains(#"{"n":1}"#) }, "the reduce is rolled back: \(bad.log.lines)")
        }
    }

    // MARK: Services

    static func servicePlugin(_ body: String, services: String = "") -> String {
        Probe.source(body, extra: services.isEmpty ? "" : "services = { \(services) },")
    }

    func testASwiftServiceReturnsAColdStream() throws {
        let h = try Harness([
            "probe/init.lua": Self.servicePlugin(
                """
                local call = env.services.add(2, 3)
                return mf.concat(call, mf.timer(10):flatMap(function() return call end))
                """)
        ])
        let calls = Counter()
        h.host.register(service: "add") { args in
            calls.increment()
            return .integer((args[0].intValue ?? 0) + (args[1].intValue ?? 0))
        }
        try h.load()
        try h.send(["type": "go"])
        h.advance(to: 100)
        XCTAssertEqual(h.log.values, ["0:5", "10:5", "10:|"])
        XCTAssertEqual(calls.value, 2, "each start of the stream calls the service")
    }

    func testAnAsyncServiceResultReentersAtTheVirtualTimeOfTheCall() throws {
        let h = try Harness([
            "probe/init.lua": Self.servicePlugin(
                """
                return mf.timer(40):flatMap(function() return env.services.slow("a") end)
                """)
        ])
        h.host.register(service: "slow") { args in
            try await Task.sleep(nanoseconds: 20_000_000)
            return .string(LuaString("slow " + (args.first?.stringValue ?? "?")))
        }
        try h.load()
        try h.send(["type": "go"])
        h.advance(to: 100)
        XCTAssertEqual(h.log.values, ["40:slow a", "40:|"])
    }

    struct UserRequest: Codable, Sendable { let id: Int; let full: Bool? }
    struct User: Codable, Sendable { let id: Int; let name: String; let tags: [String] }

    func testACodableService() throws {
        let h = try Harness([
            "probe/init.lua": Self.servicePlugin(
                """
                return env.services.user { id = 3 }:map(function(u) return u.name .. "#" .. u.id .. " " .. table.concat(u.tags, "+") end)
                """)
        ])
        h.host.register(service: "user") { (request: UserRequest) async throws -> User in
            User(id: request.id, name: "ada", tags: ["x", "y"])
        }
        try h.load()
        try h.send(["type": "go"])
        XCTAssertEqual(h.log.values, ["0:ada#3 x+y", "0:|"])
    }

    func testACodableServiceRejectsInputItCannotDecode() throws {
        let h = try Harness([
            "probe/init.lua": Self.servicePlugin(
                """
                return env.services.user { name = "no id" }:catchError(function(e) return mf.just("failed: " .. tostring(e)) end)
                """)
        ])
        h.host.register(service: "user") { (request: UserRequest) async throws -> User in
            User(id: request.id, name: "ada", tags: [])
        }
        try h.load()
        try h.send(["type": "go"])
        XCTAssertEqual(h.log.values.count, 2)
        XCTAssertTrue(h.log.values[0].hasPrefix("0:failed: "), h.log.values[0])
        XCTAssertTrue(h.log.values[0].contains("id"), "the decoding error names the missing key: \(h.log.values[0])")
    }

    func testAFailingServiceIsRecoveredByCatchError() throws {
        let h = try Harness([
            "probe/init.lua": Self.servicePlugin(
                """
                return env.services.flaky(1):catchError(function(err) return mf.just("recovered from " .. err) end)
                """)
        ])
        h.host.register(service: "flaky") { _ in throw ServiceFailure("server said 503") }
        try h.load()
        try h.send(["type": "go"])
        XCTAssertEqual(h.log.values, ["0:recovered from service 'flaky' failed: server said 503", "0:|"])
    }

    func testAFailingServiceWithoutCatchErrorIsReported() throws {
        let h = try Harness(["probe/init.lua": Self.servicePlugin("return env.services.flaky()")])
        h.host.register(service: "flaky") { _ in throw ServiceFailure("server said 503") }
        try h.load()
        try h.send(["type": "go"])
        XCTAssertEqual(h.log.values, ["0:error:service 'flaky' failed: server said 503"])
        XCTAssertEqual(
            h.log.errors.first?.location, "probe/init.lua:10", "where the service was called, from the plugin folder")
    }

    func testASwiftServicesErrorReachesSwiftAsItWasThrown() async throws {
        let h = try Harness(["probe/init.lua": Self.servicePlugin("return env.services.flaky()")])
        h.host.register(service: "flaky") { _ in throw ServiceFailure("server said 503") }
        try h.load()
        let errors = h.feature.errors
        try h.send(["type": "go"])
        var iterator = errors.makeAsyncIterator()
        let next = await iterator.next()
        let error = try XCTUnwrap(next)
        XCTAssertEqual(error.stage, .service)
        XCTAssertEqual(error.service, "flaky")
        XCTAssertEqual(error.action, ["type": "go"])
        XCTAssertEqual((error.underlying as? ServiceFailure)?.description, "server said 503")
        XCTAssertEqual(error.location, "probe/init.lua:10")
    }

    func testLuaServicesFromTheDefinition() throws {
        let plugin = Self.servicePlugin(
            """
            return mf.merge(env.services.greet("bo"), env.services.shadow())
            """,
            services: """
                greet = function(name) return mf.timer(20, "hi " .. name) end,
                shadow = function() return mf.just("lua wins") end
                """)
        let h = try Harness(["probe/init.lua": plugin])
        h.host.register(service: "shadow") { _ in "swift" }
        try h.load()
        try h.send(["type": "go"])
        h.advance(to: 100)
        XCTAssertEqual(
            h.log.values, ["0:lua wins", "20:hi bo", "20:|"],
            "a plugin's own service overrides the host's of the same name")
    }
}

final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func increment() { lock.lock(); count += 1; lock.unlock() }
    var value: Int { lock.lock(); defer { lock.unlock() }; return count }
}

/// A Swift service's failure, as the tests throw it.
struct ServiceFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
