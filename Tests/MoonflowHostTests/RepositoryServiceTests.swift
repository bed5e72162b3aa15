import Foundation
import LuaKit
import MoonflowHost
import MoonflowLua
import Runtime
import XCTest

/// Repositories exposed to Lua as `env.services.NAME` (RepositoryService.swift): registered
/// from Swift (`Record`s or `Codable` models) or declared by a plugin, called by id and by query.
final class RepositoryServiceTests: XCTestCase {
    /// A feature whose `call` action runs `env.services[repo][method](repo, arg, query)` and
    /// keeps the result (or the failure message) in its state.
    private static let probe = """
        local mf = require "moonflow"
        return mf.feature {
          name = "probe",
          initial = { calls = 0 },
          actions = { call = { repo = "string", method = "string", arg = "any?", query = "any?" } },
          mutations = { result = { value = "any" }, failure = { message = "string" } },
          repositories = DECLARED,
          handle = function(a, _, env)
            local repo = env.services[a.repo]
            return repo[a.method](repo, a.arg, a.query)
              :map(function(v) return { type = "result", value = v } end)
              :catchError(function(e) return mf.just { type = "failure", message = tostring(e) } end)
          end,
          reduce = function(s, m)
            s.calls = s.calls + 1
            s.result, s.error = m.value, m.message
            return s
          end,
        }
        """

    struct User: Codable, Identifiable, Sendable, Queryable, Equatable {
        var id: Int
        var name: String
        var team: String
    }

    private var folder: URL!

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("mf-repo-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("probe"), withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: folder) }

    private func load(_ host: FeatureHost, declared: String = "nil") throws -> RunningFeature {
        try Self.probe.replacingOccurrences(of: "DECLARED", with: declared)
            .write(to: folder.appendingPathComponent("probe/init.lua"), atomically: true, encoding: .utf8)
        return try host.load("probe")
    }

    /// Sends one `call` and returns the state after it was reduced.
    private func call(_ feature: RunningFeature, _ repo: String, _ method: String, _ arg: LuaValue = .nil, query: LuaValue = .nil) async throws -> LuaValue {
        let before = feature.state["calls"]?.intValue ?? 0
        let states = feature.states
        var action = LuaTable()
        action["type"] = "call"
        action["repo"] = .string(LuaString(repo))
        action["method"] = .string(LuaString(method))
        action["arg"] = arg
        action["query"] = query
        try feature.send(.table(action))
        let deadline = Date().addingTimeInterval(10)
        for await state in states {
            if (state["calls"]?.intValue ?? 0) > before { return state }
            if Date() > deadline { break }
        }
        XCTFail("no state after \(repo):\(method)")
        return .nil
    }

    private func names(_ state: LuaValue) -> [String] {
        (state["result"]?.tableValue?.array ?? []).compactMap { $0["name"]?.stringValue }
    }

    func testSwiftRecordRepositoryByIdAndByQuery() async throws {
        let users = InMemoryRepository<Record>([
            Record(id: "1", fields: ["name": "Ada", "team": "core"]),
            Record(id: "2", fields: ["name": "Grace", "team": "tools"]),
            Record(id: "3", fields: ["name": "Barbara", "team": "core"]),
        ])
        let host = try FeatureHost(configuration: .init(searchPaths: [folder.path]))
        host.register(repository: users, named: "people")
        let probe = try load(host)
        probe.start()

        var s = try await call(probe, "people", "get", ["id": 2])
        XCTAssertEqual(s["result"], ["id": "2", "name": "Grace", "team": "tools"])

        s = try await call(probe, "people", "getAll", ["where": ["team": "core"], "orderBy": "name"])
        XCTAssertEqual(names(s), ["Ada", "Barbara"])

        s = try await call(probe, "people", "getAll", ["orderBy": "name", "descending": true, "limit": 2])
        XCTAssertEqual(names(s), ["Grace", "Barbara"])

        s = try await call(probe, "people", "put", ["id": 4, "name": "Linus", "team": "kernel"])
        XCTAssertEqual(s["result"], ["id": "4", "name": "Linus", "team": "kernel"])
        XCTAssertEqual(try users.get(id: "4"), Record(id: "4", fields: ["name": "Linus", "team": "kernel"]), "Lua wrote through to the Swift repository")

        s = try await call(probe, "people", "deleteAll", ["where": ["team": "core"]])
        XCTAssertEqual(s["result"], .integer(2))
        XCTAssertEqual(try users.getAll(.all).map(\.id), ["2", "4"])

        s = try await call(probe, "people", "delete", ["id": 9])
        XCTAssertEqual(s["result"], .boolean(false))

        s = try await call(probe, "people", "get", ["id": 9])
        XCTAssertEqual(s["error"], "people:get found nothing for id 9")
    }

    func testSwiftCodableRepository() async throws {
        let users = InMemoryRepository<User>([User(id: 1, name: "Ada", team: "core"), User(id: 2, name: "Grace", team: "tools")])
        let host = try FeatureHost(configuration: .init(searchPaths: [folder.path]))
        host.register(repository: users, named: "users", executor: ConcurrentQueueExecutor(label: "test.users"))
        let probe = try load(host)
        probe.start()

        var s = try await call(probe, "users", "get", ["id": 1])
        XCTAssertEqual(s["result"], ["id": 1, "name": "Ada", "team": "core"])

        s = try await call(probe, "users", "putAll", [["id": 3, "name": "Linus", "team": "kernel"]], query: ["where": ["team": "tools"]])
        XCTAssertEqual(try users.getAll(.all), [User(id: 1, name: "Ada", team: "core"), User(id: 3, name: "Linus", team: "kernel")],
                       "putAll replacing a query removed Grace and added Linus")

        s = try await call(probe, "users", "getAll", ["ids": [3, 1, 7]])
        XCTAssertEqual(names(s), ["Linus", "Ada"])

        s = try await call(probe, "users", "put", ["id": 5, "name": "no team"])
        XCTAssertNotNil(s["error"]?.stringValue, "a table that does not decode as the model fails the stream")
        XCTAssertNil(try users.get(id: 5))
    }

    func testDeclaredRepositoryIsSeededPerFeatureAndKeepsIdTypes() async throws {
        let host = try FeatureHost(configuration: .init(searchPaths: [folder.path]))
        let declared = "{ things = { seed = { { id = 1, name = 'one' }, { id = 'b', name = 'bee' } } } }"
        let first = try load(host, declared: declared)
        first.start()
        var s = try await call(first, "things", "getAll")
        XCTAssertEqual(s["result"], [["id": 1, "name": "one"], ["id": "b", "name": "bee"]])
        s = try await call(first, "things", "deleteAll")
        XCTAssertEqual(s["result"], .integer(2))

        let second = try load(host, declared: declared)
        second.start()
        s = try await call(second, "things", "get", ["id": "b"])
        XCTAssertEqual(s["result"], ["id": "b", "name": "bee"], "each feature gets its own seeded repository")
    }

    func testBadArgumentsAreLuaErrorsNamingTheFix() async throws {
        let host = try FeatureHost(configuration: .init(searchPaths: [folder.path]))
        host.register(repository: InMemoryRepository<Record>(), named: "people")
        let probe = try load(host)
        let errors = probe.errors
        probe.start()
        try probe.send(["type": "call", "repo": "people", "method": "getAll", "arg": ["where": ["team": "core"], "sortBy": "name"]])
        var message: String?
        for await failure in errors { message = failure.message; break }
        XCTAssertTrue(message?.contains("people:getAll: unknown query field sortBy; a query takes where, orderBy, descending, limit and offset") ?? false, message ?? "no error")
    }
}
