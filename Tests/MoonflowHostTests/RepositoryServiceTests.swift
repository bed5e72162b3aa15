import Foundation
import LuaKit
import MoonflowHost
import MoonflowLua
import MoonflowRepositories
import MoonflowSQLite
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
        try FileManager.default.createDirectory(
            at: folder.appendingPathComponent("probe"), withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: folder) }

    private func load(_ host: FeatureHost, declared: String = "nil") throws -> RunningFeature {
        try Self.probe.replacingOccurrences(of: "DECLARED", with: declared)
            .write(to: folder.appendingPathComponent("probe/init.lua"), atomically: true, encoding: .utf8)
        return try host.load("probe")
    }

    /// Sends one `call` and returns the state after it was reduced.
    private func call(
        _ feature: RunningFeature, _ repo: String, _ method: String, _ arg: LuaValue = .nil, query: LuaValue = .nil
    ) async throws -> LuaValue {
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
        XCTAssertEqual(
            try users.get(id: "4"), Record(id: "4", fields: ["name": "Linus", "team": "kernel"]),
            "Lua wrote through to the Swift repository")

        s = try await call(probe, "people", "deleteAll", ["where": ["team": "core"]])
        XCTAssertEqual(s["result"], .integer(2))
        XCTAssertEqual(try users.getAll(.all).map(\.id), ["2", "4"])

        s = try await call(probe, "people", "delete", ["id": 9])
        XCTAssertEqual(s["result"], .boolean(false))

        s = try await call(probe, "people", "get", ["id": 9])
        XCTAssertEqual(s["error"], "people:get found nothing for id 9")
    }

    func testSwiftCodableRepository() async throws {
        let users = InMemoryRepository<User>([
            User(id: 1, name: "Ada", team: "core"), User(id: 2, name: "Grace", team: "tools"),
        ])
        let host = try FeatureHost(configuration: .init(searchPaths: [folder.path]))
        host.register(repository: users, named: "users", executor: ConcurrentQueueExecutor(label: "test.users"))
        let probe = try load(host)
        probe.start()

        var s = try await call(probe, "users", "get", ["id": 1])
        XCTAssertEqual(s["result"], ["id": 1, "name": "Ada", "team": "core"])

        s = try await call(
            probe, "users", "putAll", [["id": 3, "name": "Linus", "team": "kernel"]],
            query: ["where": ["team": "tools"]])
        XCTAssertEqual(
            try users.getAll(.all),
            [User(id: 1, name: "Ada", team: "core"), User(id: 3, name: "Linus", team: "kernel")],
            "putAll replacing a query removed Grace and added Linus")

        s = try await call(probe, "users", "getAll", ["ids": [3, 1, 7]])
        XCTAssertEqual(names(s), ["Linus", "Ada"])

        s = try await call(probe, "users", "put", ["id": 5, "name": "no team"])
        XCTAssertNotNil(s["error"]?.stringValue, "a table that does not decode as the model fails the stream")
        XCTAssertNil(try users.get(id: 5))
    }

    /// A repository whose put of a user named "slow" takes a while, and which notes the
    /// order its puts end in.
    struct SlowPuts: Repository {
        final class Log: @unchecked Sendable {
            private let lock = NSLock()
            private var names: [String] = []
            func add(_ name: String) { lock.withLock { names.append(name) } }
            var ended: [String] { lock.withLock { names } }
        }
        let inner = InMemoryRepository<User>([])
        let log = Log()
        func get(id: Int) throws -> User? { try inner.get(id: id) }
        func getAll(ids: [Int]) throws -> [User] { try inner.getAll(ids: ids) }
        func getAll(_ query: Query) throws -> [User] { try inner.getAll(query) }
        func put(_ model: User) throws -> User {
            if model.name == "slow" { Thread.sleep(forTimeInterval: 0.3) }
            defer { log.add(model.name) }
            return try inner.put(model)
        }
        func putAll(_ models: [User]) throws -> [User] { try inner.putAll(models) }
        func putAll(_ models: [User], replacing query: Query) throws -> [User] {
            try inner.putAll(models, replacing: query)
        }
        func delete(id: Int) throws -> Bool { try inner.delete(id: id) }
        func deleteAll(ids: [Int]) throws -> Int { try inner.deleteAll(ids: ids) }
        func deleteAll(_ query: Query) throws -> Int { try inner.deleteAll(query) }
    }

    /// Calls to one repository take effect in the order the feature made them: a feature
    /// that saves after every change (checkout's draft) and then loads reads its last save.
    /// Each call ran in a task of its own before, so a slow save was overtaken by the next
    /// (checkout's spec, on a busy machine, restored a draft one line short).
    func testCallsToARepositoryTakeEffectInTheOrderMade() async throws {
        let users = SlowPuts()
        let host = try FeatureHost(configuration: .init(searchPaths: [folder.path]))
        host.register(repository: users, named: "users", executor: ConcurrentQueueExecutor(label: "test.users"))
        let feature = try load(host)
        feature.start()
        let states = feature.states
        for name in ["slow", "fast"] {
            var action = LuaTable()
            action["type"] = "call"
            action["repo"] = "users"
            action["method"] = "put"
            action["arg"] = ["id": 1, "name": .string(LuaString(name)), "team": "core"]
            try feature.send(.table(action))
        }
        let deadline = Date().addingTimeInterval(30)
        for await state in states where (state["calls"]?.intValue ?? 0) >= 2 || Date() > deadline { break }
        XCTAssertEqual(users.log.ended, ["slow", "fast"], "the second put waited for the first")
        let s = try await call(feature, "users", "get", ["id": 1])
        XCTAssertEqual(s["result"]?["name"]?.stringValue, "fast", "the last put made is the one kept")
    }

    /// A repository whose put of a user named "held" waits until the test opens its gate,
    /// and which notes the names it stored.
    struct HeldPuts: Repository {
        let inner = InMemoryRepository<User>([])
        let gate = DispatchSemaphore(value: 0)
        let log = SlowPuts.Log()
        func get(id: Int) throws -> User? { try inner.get(id: id) }
        func getAll(ids: [Int]) throws -> [User] { try inner.getAll(ids: ids) }
        func getAll(_ query: Query) throws -> [User] { try inner.getAll(query) }
        func put(_ model: User) throws -> User {
            if model.name == "held" { gate.wait() }
            defer { log.add(model.name) }
            return try inner.put(model)
        }
        func putAll(_ models: [User]) throws -> [User] { try inner.putAll(models) }
        func putAll(_ models: [User], replacing query: Query) throws -> [User] {
            try inner.putAll(models, replacing: query)
        }
        func delete(id: Int) throws -> Bool { try inner.delete(id: id) }
        func deleteAll(ids: [Int]) throws -> Int { try inner.deleteAll(ids: ids) }
        func deleteAll(_ query: Query) throws -> Int { try inner.deleteAll(query) }
    }

    /// A call whose stream is cancelled while it waits for the call made before it never
    /// runs: cancelling a save that has not started yet leaves the repository as it was.
    func testACallCancelledWhileWaitingItsTurnNeverRuns() async throws {
        let users = HeldPuts()
        let host = try FeatureHost(configuration: .init(searchPaths: [folder.path]))
        host.register(repository: users, named: "users", executor: ConcurrentQueueExecutor(label: "test.users"))
        let feature = try load(host)
        feature.start()
        for name in ["held", "cancelled"] {
            var action = LuaTable()
            action["type"] = "call"
            action["repo"] = "users"
            action["method"] = "put"
            action["arg"] = ["id": name == "held" ? 1 : 2, "name": .string(LuaString(name)), "team": "core"]
            try feature.send(.table(action))
        }
        // Both streams started: the first call holds the repository, the second waits its turn.
        let deadline = Date().addingTimeInterval(30)
        while feature.inFlight.count < 2 && Date() < deadline { try await Task.sleep(for: .milliseconds(5)) }
        XCTAssertEqual(feature.inFlight.count, 2, "both calls in flight")
        feature.cancel(actionType: "call")
        users.gate.signal()
        // Made after both, so it runs after both have ended (run or skipped).
        let s = try await call(feature, "users", "getAll", ["ids": [1, 2]])
        XCTAssertFalse(names(s).contains("cancelled"), "the call cancelled while waiting stored nothing")
        XCTAssertFalse(users.log.ended.contains("cancelled"), "the call cancelled while waiting did not run")
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
        try probe.send([
            "type": "call", "repo": "people", "method": "getAll", "arg": ["where": ["team": "core"], "sortBy": "name"],
        ])
        var message: String?
        for await failure in errors { message = failure.message; break }
        XCTAssertTrue(
            message?.contains(
                "people:getAll: unknown query field sortBy; a query takes where, orderBy, descending, limit and offset")
                ?? false, message ?? "no error")
    }

    // MARK: - SQLite repositories

    private static let sqliteThings =
        "{ things = { sqlite = 'things.db', indexes = { 'team' }, seed = { { id = 1, name = 'one', team = 'a' }, { id = 'b', name = 'bee', team = 'b' } } } }"

    /// A host whose declared files are SQLite ones kept as `storage` says (nil: no file store).
    private func host(_ storage: RepositoryStorage?) throws -> FeatureHost {
        var configuration = FeatureHost.Configuration(searchPaths: [folder.path])
        configuration.repositoryFiles = storage.map { SQLiteRepositoryFiles(storage: $0) }
        return try FeatureHost(configuration: configuration)
    }

    func testDeclaredSQLiteRepositoryOutlivesItsHost() async throws {
        let dir = folder.appendingPathComponent("db").path
        do {
            let first = try load(try host(.directory(dir)), declared: Self.sqliteThings)
            first.start()
            var s = try await call(first, "things", "getAll")
            XCTAssertEqual(
                s["result"], [["id": 1, "name": "one", "team": "a"], ["id": "b", "name": "bee", "team": "b"]],
                "seeded when the table was made")
            s = try await call(
                first, "things", "put",
                ["id": 3, "name": "three", "team": "a", "big": .integer(1 << 53 + 1), "half": 0.5, "tags": ["x", "y"]])
            s = try await call(first, "things", "delete", ["id": 1])
            XCTAssertEqual(s["result"], .boolean(true))
        }
        XCTAssertTrue(FileManager.default.fileExists(atPath: dir + "/things.db"), "--db DIR holds the file")

        let second = try load(try host(.directory(dir)), declared: Self.sqliteThings)
        second.start()
        var s = try await call(second, "things", "getAll", ["where": ["team": "a"]])
        XCTAssertEqual(
            s["result"],
            [["id": 3, "name": "three", "team": "a", "big": .integer(1 << 53 + 1), "half": 0.5, "tags": ["x", "y"]]],
            "the next host reads what the first wrote, and the seed did not come back")
        s = try await call(second, "things", "get", ["id": "b"])
        XCTAssertEqual(s["result"]?["name"], "bee", "a string id stays a string")
    }

    func testTheSameLuaCallsGiveTheSameResultsOnEitherKind() async throws {
        let calls: [(String, LuaValue, LuaValue)] = [
            ("getAll", ["orderBy": "name", "descending": true], .nil),
            ("put", ["id": 4, "name": "four", "team": "a", "score": 2.0], .nil),
            ("getAll", ["where": ["team": "a"], "orderBy": ["name"], "limit": 5, "offset": 0], .nil),
            ("getAll", ["ids": [4, "b", 9]], .nil),
            ("putAll", [["id": 5, "name": "five", "team": "c"]], ["where": ["team": "b"]]),
            ("get", ["where": ["score": 2.0]], .nil),
            ("getAll", ["where": ["score": 2]], .nil),
            ("delete", ["where": ["team": "c"]], .nil),
            ("deleteAll", ["ids": [1, 9]], .nil),
            ("get", ["id": 1], .nil),
            ("getAll", .nil, .nil),
            ("deleteAll", .nil, .nil),
        ]
        var results: [String: [LuaValue]] = [:]
        let inMemory =
            "{ things = { seed = { { id = 1, name = 'one', team = 'a' }, { id = 'b', name = 'bee', team = 'b' } } } }"
        for (kind, storage, declared) in [
            ("in-memory", RepositoryStorage.asDeclared, inMemory), ("sqlite", .inMemory, Self.sqliteThings),
        ] {
            let probe = try load(try host(storage), declared: declared)
            probe.start()
            for (method, arg, query) in calls {
                let s = try await call(probe, "things", method, arg, query: query)
                results[kind, default: []].append(s["result"] ?? s["error"] ?? .nil)
            }
        }
        XCTAssertEqual(results["sqlite"], results["in-memory"])
        XCTAssertEqual(results["in-memory"]?[5]["id"], 4, "a float filter finds the float")
        XCTAssertEqual(
            results["in-memory"]?[6], .table(LuaTable(array: [], isJSONArray: true)), "an integer filter does not")
        XCTAssertEqual(results["in-memory"]?[9], "things:get found nothing for id 1")
    }

    func testStorageFailuresAreLuaErrorsThatCatchErrorHandles() async throws {
        let dir = folder.appendingPathComponent("db")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let file = dir.appendingPathComponent("things.db").path
        try Data(repeating: 0x21, count: 4096).write(to: URL(fileURLWithPath: file))
        let probe = try load(try host(.directory(dir.path)), declared: Self.sqliteThings)
        probe.start()
        var s = try await call(probe, "things", "getAll")
        XCTAssertEqual(
            s["error"]?.stringValue,
            "storage failed: \(file): the file is not a SQLite database or is damaged (SQLite error 26: file is not a database); move it away to start empty, or restore it from a backup"
        )

        try FileManager.default.removeItem(atPath: file)
        s = try await call(probe, "things", "getAll", ["orderBy": "name"])
        XCTAssertEqual(names(s), ["bee", "one"], "the feature goes on once the file is moved away")

        // An infinity never reaches SQLite from Lua: the call's argument cannot be copied out.
        let errors = probe.errors
        var action = LuaTable()
        action["type"] = "call"; action["repo"] = "things"; action["method"] = "put"
        action["arg"] = ["id": 7, "score": .number(.infinity)]
        try probe.send(.table(action))
        var message: String?
        for await failure in errors { message = failure.message; break }
        XCTAssertTrue(
            message?.contains("infinity (math.huge) cannot be copied out of Lua; use nil, or a finite number") ?? false,
            message ?? "no error")
        s = try await call(probe, "things", "getAll", ["ids": [7]])
        XCTAssertEqual(
            s["result"], .table(LuaTable(array: [], isJSONArray: true)), "nothing of the failed put was kept")
    }

    func testDeclaredFilesAreRelativeToThePluginUnlessSwappedForMemory() async throws {
        let beside = folder.appendingPathComponent("probe/things.db").path
        let swapped = try load(try host(nil), declared: Self.sqliteThings)
        swapped.start()
        _ = try await call(swapped, "things", "deleteAll")
        XCTAssertFalse(FileManager.default.fileExists(atPath: beside), "in-memory repositories write no file")

        let declared = try load(try host(.asDeclared), declared: Self.sqliteThings)
        declared.start()
        let s = try await call(declared, "things", "getAll")
        XCTAssertEqual(names(s), ["one", "bee"])
        XCTAssertTrue(FileManager.default.fileExists(atPath: beside), "the file is beside the plugin's init.lua")
    }

    func testSwiftRegisteredSQLiteRepository() async throws {
        let users = try SQLiteRepository<Record>(
            path: folder.appendingPathComponent("users.db").path, table: "users", indexes: ["team"])
        try users.put(Record(id: "1", fields: ["name": "Ada", "team": "core"]))
        let host = try host(.asDeclared)
        host.register(repository: users, named: "people")
        let probe = try load(host)
        probe.start()
        var s = try await call(probe, "people", "put", ["id": 2, "name": "Grace", "team": "core"])
        s = try await call(
            probe, "people", "getAll", ["where": ["team": "core"], "orderBy": "name", "descending": true])
        XCTAssertEqual(names(s), ["Grace", "Ada"])
        XCTAssertEqual(try users.get(id: "2")?["name"], "Grace", "Lua wrote to the SQLite table")
    }

    func testBadSQLiteDeclarationsNameTheFieldAndTheFix() throws {
        let host = try host(.inMemory)
        let cases = [
            (
                "{ t = { indexes = { 'a' } } }",
                "probe: repositories.t.indexes needs sqlite = \"t.db\": only SQLite repositories have indexes"
            ),
            (
                "{ t = { sqlite = 5 } }",
                "probe: repositories.t.sqlite must be a file name like \"t.db\" (relative to the plugin folder, or absolute)"
            ),
            (
                "{ t = { sqlite = 't.db', indexes = { 1 } } }",
                "probe: repositories.t.indexes[1] must be a field name (a string without double quotes), like \"team\""
            ),
            (
                "{ t = { sqlite = 't.db', indexes = 'a' } }",
                "probe: repositories.t.indexes must be a list of field names like { \"team\", \"name\" }"
            ),
            (
                "{ t = { sqlite = 't.db', index = { 'a' } } }",
                "probe: repositories.t: unknown field \"index\"; a repository declaration takes seed, sqlite and indexes"
            ),
            (
                "{ sqlite_x = { sqlite = 't.db' } }",
                "repositories.sqlite_x: 'sqlite_x' cannot be a table name (SQLite and GRDB reserve empty names and the prefixes sqlite_ and grdb_); rename the repository"
            ),
        ]
        for (declared, message) in cases {
            XCTAssertThrowsError(try load(host, declared: declared), declared) { error in
                XCTAssertEqual("\(error)", message)
            }
        }
    }

    func testReadOnlyAndFullDatabasesAreLuaErrorsAndTheFeatureGoesOn() async throws {
        let path = folder.appendingPathComponent("people.db").path
        try SQLiteRepository<Record>(path: path, table: "people").put(Record(id: "1", fields: ["name": "Ada"]))
        let host = try host(.asDeclared)
        host.register(
            repository: try SQLiteRepository<Record>(path: path, table: "people", options: .init(readOnly: true)),
            named: "archive")
        host.register(
            repository: try SQLiteRepository<Record>(
                path: folder.appendingPathComponent("small.db").path, table: "small",
                options: .init(maximumSize: 64 * 1024)), named: "small")
        let probe = try load(host)
        probe.start()

        var s = try await call(probe, "archive", "put", ["id": 2, "name": "Grace"])
        XCTAssertEqual(
            s["error"]?.stringValue,
            "storage failed: \(path): the database is read-only (SQLite error 8: attempt to write a readonly database); make the file and its folder writable, or store it elsewhere"
        )
        s = try await call(probe, "archive", "getAll")
        XCTAssertEqual(names(s), ["Ada"], "reads still work, and the feature went on")

        let big = LuaValue.table(
            LuaTable(
                array: (1...400).map { i -> LuaValue in
                    ["id": .integer(Int64(i)), "text": .string(LuaString(String(repeating: "x", count: 1000)))]
                }, isJSONArray: true))
        s = try await call(probe, "small", "putAll", big)
        XCTAssertTrue(
            s["error"]?.stringValue?.hasPrefix(
                "storage failed: \(folder.appendingPathComponent("small.db").path): the disk or the database's size limit is full"
            ) ?? false, "\(s)")
        s = try await call(probe, "small", "getAll")
        XCTAssertEqual(
            s["result"], .table(LuaTable(array: [], isJSONArray: true)), "no row of the failed batch was kept")
        s = try await call(probe, "small", "put", ["id": 1, "text": "fits"])
        XCTAssertEqual(s["result"], ["id": "1", "text": "fits"])
    }

    /// The Swift example of docs/embedding.md's "Repositories on SQLite", with its paths in a temporary folder.
    func testReadmeSQLiteExample() async throws {
        let path = folder.appendingPathComponent("data/app.db").path
        let host = try host(.asDeclared)

        let users = try SQLiteRepository<Record>(path: path, table: "users", indexes: ["team"])
        host.register(repository: users, named: "users")  // env.services.users in Lua

        struct Post: Codable, Identifiable, Sendable { var id: Int; var user: Int; var title: String }
        let posts = try SQLiteRepository<Post>(path: path, table: "posts", indexes: ["user"])
        try posts.putAll([
            Post(id: 1, user: 7, title: "b"), Post(id: 2, user: 8, title: "c"), Post(id: 3, user: 7, title: "a"),
        ])
        let mine = try posts.getAll(Query.where("user", equals: 7).sorted(by: "title"))
        XCTAssertEqual(mine.map(\.id), [3, 1])

        let probe = try load(host)
        probe.start()
        let s = try await call(probe, "users", "put", ["id": "u1", "name": "Ada", "team": "core"])
        XCTAssertEqual(s["result"], ["id": "u1", "name": "Ada", "team": "core"])
        XCTAssertEqual(try users.getAll(.where("team", equals: "core")).map(\.id), ["u1"])
    }
}
