import LuaKit
import LuaRepositories
import MoonflowHost
import Runtime

/// Swift repositories as Lua services, and where plugins' declared repositories are kept.
extension FeatureHost {
    /// Exposes a Swift repository of `Record`s to every feature loaded afterwards as `env.services.NAME`.
    ///
    ///     let users = InMemoryRepository<Record>([Record(id: "1", fields: ["name": "Ada"])])
    ///     host.register(repository: users, named: "users")
    ///     // Lua: env.services.users:get{ id = "1" }   -- an integer id 1 finds "1" too
    ///
    /// A record's `id` reaches Lua as a string; its fields as Lua values.
    /// - Parameters:
    ///   - repository: The store; every feature shares it.
    ///   - name: The service name in Lua.
    ///   - executor: Where its CRUD use cases run (a serial queue of its own by default).
    public func register(repository: any Repository<Record>, named name: String, executor: (any Executor)? = nil) {
        let service = RepositoryService(
            name: name, repository: repository,
            executor: executor ?? SerialQueueExecutor(label: "moonflow.repository.\(name)"),
            toLua: { record in
                var t = LuaTable()
                for (k, v) in record.fields { t[k] = RepositoryService.luaValue(v) }
                t["id"] = .string(LuaString(record.id))
                return .table(t)
            },
            fromLua: { value in
                let row = try LuaRecord(lua: value)
                return Record(id: try Self.recordID(row.id), fields: row.fields)
            },
            id: Self.recordID)
        register(repositoryService: service)
    }

    /// Exposes a Swift repository of `Codable` models as `env.services.NAME`; models
    /// cross as Lua tables through `LuaValueEncoder`/`LuaValueDecoder`.
    ///
    ///     struct User: Codable, Identifiable, Queryable, Sendable { var id: Int; var name: String }
    ///     host.register(repository: InMemoryRepository<User>(), named: "users")
    ///
    /// - Parameters:
    ///   - repository: The store; every feature shares it.
    ///   - name: The service name in Lua.
    ///   - executor: Where its CRUD use cases run (a serial queue of its own by default).
    public func register<Model: Codable & Identifiable & Sendable>(
        repository: any Repository<Model>, named name: String, executor: (any Executor)? = nil
    ) where Model.ID: Codable & Sendable {
        let service = RepositoryService(
            name: name, repository: repository,
            executor: executor ?? SerialQueueExecutor(label: "moonflow.repository.\(name)"),
            toLua: { try LuaValueEncoder().encode($0) },
            fromLua: { try LuaValueDecoder().decode(Model.self, from: $0) },
            id: { try LuaValueDecoder().decode(Model.ID.self, from: RepositoryService.luaValue($0)) })
        register(repositoryService: service)
    }

    /// Exposes an already built `RepositoryService` under its name to every feature loaded afterwards.
    public func register(repositoryService service: RepositoryService) { registerRepository(service) }
}

extension FeatureHost.Configuration {
    /// Keeps the repositories plugins declare with a file (`sqlite = "NAME.db"`); nil:
    /// every declared repository is a fresh in-memory one, seeded. MoonflowSQLite's
    /// `SQLiteRepositoryFiles` keeps them in SQLite files.
    public var repositoryFiles: (any RepositoryFiles)? {
        get { declaredRepositoryFiles }
        set { declaredRepositoryFiles = newValue }
    }
}
