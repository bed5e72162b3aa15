import Foundation
import LuaKit
import MoonflowLua
import Runtime
import Streams

/// A `Repository` as Lua sees it: a service object whose methods run Harmony's
/// default CRUD use cases on an executor and return streams.
///
///     -- by id, by ids, or by query
///     env.services.users:get{ id = 1 }
///     env.services.users:getAll{ where = { team = "core" }, orderBy = "name", descending = false, limit = 10 }
///     env.services.users:put{ id = 4, name = "Grace" }
///     env.services.users:putAll({ ... }, { where = { team = "old" } })   -- replacing what the query matches
///     env.services.users:delete{ id = 4 }
///     env.services.users:deleteAll{ where = { team = "old" } }          -- nil: every record
///
/// `get` emits the record (and fails when there is none), `getAll` a list,
/// `put` the stored record, `putAll` the stored list, `delete` whether one
/// existed, `deleteAll` how many went. A query table takes `where` (field
/// equalities), `orderBy` (a field or a list of fields), `descending`,
/// `limit` and `offset`.
///
/// Three ways to get one:
/// - a plugin declares `repositories = { users = { seed = { {id = 1, name = "Ada"}, ... } } }`
///   and gets a fresh, seeded in-memory repository as `env.services.users`;
/// - a plugin declares `repositories = { users = { sqlite = "users.db", indexes = { "team" }, seed = {...} } }`
///   and gets the table `users` of that SQLite file (see `DeclaredRepositories.swift`);
/// - a Swift program registers its own: `host.register(repository: users, named: "users")`.
///
/// **Threading:** the methods are called by Lua on the host's state executor;
/// the use case runs on the repository's executor and its result re-enters the
/// state executor (`LuaBridge.reenter`), counted as pending work so a
/// virtual-clock run waits for it.
public final class RepositoryService: @unchecked Sendable {
    /// The name Lua sees (`env.services.NAME`), used in messages.
    public let name: String
    private let run: @Sendable (Call) async throws -> LuaValue

    /// What one method call asks for, parsed from Lua on the state executor.
    enum Call: Sendable {
        case get(Target)
        case getAll(Target)
        case put(LuaValue, replacing: Query?)
        case putAll([LuaValue], replacing: Query?)
        case delete(Target)
        case deleteAll(Target)
    }

    /// Which records a call addresses.
    enum Target: Sendable, CustomStringConvertible {
        case id(RecordValue)
        case ids([RecordValue])
        case query(Query)

        var description: String {
            switch self {
            case .id(let v): "id \(RepositoryService.luaValue(v))"
            case .ids(let vs): "ids \(vs.map { RepositoryService.luaValue($0).description }.joined(separator: ", "))"
            case .query(let q): "the query \(q)"
            }
        }
    }

    /// Wraps `repository` with conversions between its models and Lua values.
    ///
    /// - Parameters:
    ///   - name: The service name, for messages.
    ///   - repository: Where the models live.
    ///   - executor: Where the CRUD use cases run.
    ///   - toLua: A model as a Lua table.
    ///   - fromLua: A Lua table as a model (throws with a message naming what is wrong).
    ///   - id: A Lua id (`{ id = ... }`) as the model's identity.
    public init<Model>(
        name: String, repository: any Repository<Model>, executor: any Executor,
        toLua: @escaping @Sendable (Model) throws -> LuaValue,
        fromLua: @escaping @Sendable (LuaValue) throws -> Model,
        id: @escaping @Sendable (RecordValue) throws -> Model.ID
    ) where Model: Identifiable & Sendable, Model.ID: Sendable {
        self.name = name
        let get = CRUD.Get(repository, executor: executor)
        let getAll = CRUD.GetAll(repository, executor: executor)
        let put = CRUD.Put(repository, executor: executor)
        let putAll = CRUD.PutAll(repository, executor: executor)
        let delete = CRUD.Delete(repository, executor: executor)
        let deleteAll = CRUD.DeleteAll(repository, executor: executor)
        @Sendable func list(_ models: [Model]) throws -> LuaValue {
            .table(LuaTable(array: try models.map(toLua), isJSONArray: true))
        }
        run = { call in
            switch call {
            case .get(let target):
                let found: Model?
                switch target {
                case .id(let v): found = try await get.execute(id: try id(v))
                case .query(let q): found = try await get.execute(q)
                case .ids: throw RepositoryServiceError("\(name):get takes { id = ... } or a query, not ids; use getAll{ ids = {...} }")
                }
                guard let found else { throw RepositoryServiceError("\(name):get found nothing for \(target.description)") }
                return try toLua(found)
            case .getAll(let target):
                switch target {
                case .id(let v): return try list(try await getAll.execute(ids: [try id(v)]))
                case .ids(let vs): return try list(try await getAll.execute(ids: try vs.map(id)))
                case .query(let q): return try list(try await getAll.execute(q))
                }
            case .put(let value, let query):
                let model = try fromLua(value)
                if let query { return try toLua(try await put.execute(model, replacing: query)) }
                return try toLua(try await put.execute(model))
            case .putAll(let values, let query):
                let models = try values.map(fromLua)
                if let query { return try list(try await putAll.execute(models, replacing: query)) }
                return try list(try await putAll.execute(models))
            case .delete(let target):
                switch target {
                case .id(let v): return .boolean(try await delete.execute(id: try id(v)))
                case .query(let q): return .boolean(try await delete.execute(q))
                case .ids: throw RepositoryServiceError("\(name):delete takes { id = ... } or a query, not ids; use deleteAll{ ids = {...} }")
                }
            case .deleteAll(let target):
                switch target {
                case .id(let v): return .integer(Int64(try await deleteAll.execute(ids: [try id(v)])))
                case .ids(let vs): return .integer(Int64(try await deleteAll.execute(ids: try vs.map(id))))
                case .query(let q): return .integer(Int64(try await deleteAll.execute(q)))
                }
            }
        }
    }

    /// The call's result as a cold stream: the use case runs when it is started.
    func stream(_ call: Call) -> Producer<LuaValue> {
        let run = self.run
        return Producer(async: { try await run(call) })
            .catchError { error in .fail(LuaStreamError(message: String(describing: error))) }
    }

    // MARK: - Lua methods

    /// `get`, `getAll`, `put`, `putAll`, `delete`, `deleteAll`, each `(self, argument [, query])`.
    static func methods(_ bridge: LuaBridge) -> [String: LuaFunction] {
        func method(_ method: String, _ parse: @escaping (RepositoryService, LuaSlots) throws -> Call) -> (String, LuaFunction) {
            (method, { [unowned bridge] args in
                guard let service = args.object(1, as: RepositoryService.self) else {
                    throw LuaArgumentError(message: "bad argument #1 to '\(method)' (repository expected, got \(args.typeName(1))); call it with a colon: env.services.NAME:\(method){...}")
                }
                let call = try parse(service, args)
                return [bridge.push(bridge.reenter(service.stream(call), service: "\(service.name):\(method)"))]
            })
        }
        return Dictionary(uniqueKeysWithValues: [
            method("get") { s, a in .get(try s.target(a, "get", allowAll: false)) },
            method("getAll") { s, a in .getAll(try s.target(a, "getAll", allowAll: true)) },
            method("put") { s, a in
                guard a.isTable(2) else { throw a.bad(2, "put", "record table") }
                return .put(try a.value(2, path: "record"), replacing: try s.replacing(a, "put"))
            },
            method("putAll") { s, a in
                guard case .table(let t) = try a.value(2, path: "records"), t.hash.isEmpty else {
                    throw a.bad(2, "putAll", "list of records")
                }
                return .putAll(t.array, replacing: try s.replacing(a, "putAll"))
            },
            method("delete") { s, a in .delete(try s.target(a, "delete", allowAll: false)) },
            method("deleteAll") { s, a in .deleteAll(try s.target(a, "deleteAll", allowAll: true)) },
        ])
    }

    /// Argument 2: `{ id = v }`, `{ ids = {...} }` (when listing), a query table, or nil (every record when `allowAll`).
    private func target(_ args: LuaSlots, _ method: String, allowAll: Bool) throws -> Target {
        let value = try args.value(2, path: "argument")
        if value.isNil, allowAll { return .query(.all) }
        guard case .table(let t) = value else {
            throw LuaArgumentError(message: "\(name):\(method) takes { id = ... }\(allowAll ? ", { ids = {...} }" : "") or a query { where = {...}, orderBy = ..., limit = ... } (got \(value.typeName))")
        }
        if let id = value["id"] {
            guard t.count == 1 else { throw LuaArgumentError(message: "\(name):\(method){ id = ... } takes nothing else; use a query with where = { id = ... } to combine") }
            return .id(try RepositoryService.recordValue(id, path: "id"))
        }
        if let ids = value["ids"] {
            guard allowAll, t.count == 1, case .table(let list) = ids, list.hash.isEmpty else {
                throw LuaArgumentError(message: "\(name):\(method): 'ids' must be the only field, a list of ids\(allowAll ? "" : "; only getAll and deleteAll take ids")")
            }
            return .ids(try list.array.enumerated().map { try RepositoryService.recordValue($1, path: "ids[\($0 + 1)]") })
        }
        return .query(try query(value, method))
    }

    /// Argument 3 of put/putAll: the query whose matches the new records replace.
    private func replacing(_ args: LuaSlots, _ method: String) throws -> Query? {
        let value = try args.value(3, path: "query")
        return value.isNil ? nil : try query(value, method)
    }

    /// `{ where = { field = value }, orderBy = "f" | {"f", "g"}, descending = bool, limit = n, offset = n }`.
    func query(_ value: LuaValue, _ method: String) throws -> Query {
        guard case .table(let t) = value, t.array.isEmpty else {
            throw LuaArgumentError(message: "\(name):\(method): a query is a table { where = {...}, orderBy = ..., descending = ..., limit = ..., offset = ... }")
        }
        func fail(_ why: String) -> LuaArgumentError { LuaArgumentError(message: "\(name):\(method): \(why)") }
        var query = Query()
        for (key, _) in t.hash {
            guard let k = key.stringValue, ["where", "orderBy", "descending", "limit", "offset"].contains(k) else {
                throw fail("unknown query field \(key.stringValue ?? key.description); a query takes where, orderBy, descending, limit and offset")
            }
        }
        if let filters = value["where"] {
            guard case .table(let w) = filters, w.array.isEmpty else { throw fail("'where' must be a table of field = value") }
            for (k, v) in w.hash.sorted(by: { "\($0.key)" < "\($1.key)" }) {
                guard let field = k.stringValue else { throw fail("'where' keys must be field names (got \(k))") }
                query = query.and(field, equals: try RepositoryService.recordValue(v, path: "where.\(field)"))
            }
        }
        var descending = false
        if let d = value["descending"] {
            guard let b = d.boolValue else { throw fail("'descending' must be a boolean") }
            descending = b
        }
        switch value["orderBy"] {
        case nil: break
        case .string(let field)?: query = query.sorted(by: field.description, ascending: !descending)
        case .table(let fields)? where fields.hash.isEmpty:
            for f in fields.array {
                guard let field = f.stringValue else { throw fail("'orderBy' must be a field name or a list of them") }
                query = query.sorted(by: field, ascending: !descending)
            }
        default: throw fail("'orderBy' must be a field name or a list of them")
        }
        for key in ["limit", "offset"] {
            guard let v = value[key] else { continue }
            guard let n = v.intValue, n >= 0 else { throw fail("'\(key)' must be a whole number, 0 or more") }
            if key == "limit" { query.limit = Int(n) } else { query.offset = Int(n) }
        }
        return query
    }

    // MARK: - Lua values and record values

    /// A Lua value as a record field value (tables become arrays or objects).
    static func recordValue(_ value: LuaValue, path: String) throws -> RecordValue {
        switch value {
        case .nil: return .null
        case .boolean(let b): return .bool(b)
        case .integer(let i): return .int(Int(i))
        case .number(let d): return .double(d)
        case .string(let s): return .string(s.description)
        case .table(let t):
            if t.hash.isEmpty && (!t.array.isEmpty || t.isJSONArray) {
                return .array(try t.array.enumerated().map { try recordValue($1, path: "\(path)[\($0 + 1)]") })
            }
            guard t.array.isEmpty else {
                throw RepositoryServiceError("\(path) mixes a list and named fields; a record field is a value, a list or a table of named fields")
            }
            var object: [String: RecordValue] = [:]
            for (k, v) in t.hash {
                guard let key = k.stringValue else { throw RepositoryServiceError("\(path) has a key \(k) that is not a string") }
                object[key] = try recordValue(v, path: "\(path).\(key)")
            }
            return .object(object)
        }
    }

    /// A record field value as a Lua value.
    static func luaValue(_ value: RecordValue) -> LuaValue {
        switch value {
        case .null: return .nil
        case .bool(let b): return .boolean(b)
        case .int(let i): return .integer(Int64(i))
        case .double(let d): return .number(d)
        case .string(let s): return .string(LuaString(s))
        case .array(let a): return .table(LuaTable(array: a.map(luaValue), isJSONArray: true))
        case .object(let o):
            var t = LuaTable()
            for (k, v) in o { t[k] = luaValue(v) }
            return .table(t)
        }
    }
}

/// A record made in Lua: an id (an integer or a string, kept as it came) and named fields.
/// The model of the repositories a plugin declares.
///
///     let ada = LuaRecord(id: 1, fields: ["name": "Ada"])   // Lua: { id = 1, name = "Ada" }
public struct LuaRecord: Identifiable, Sendable, Hashable, Queryable {
    public var id: RecordValue
    public var fields: [String: RecordValue]

    public init(id: RecordValue, fields: [String: RecordValue] = [:]) {
        self.id = id
        self.fields = fields
    }

    public func fieldValue(_ name: String) -> RecordValue? { name == "id" ? id : fields[name] }

    /// A Lua table `{ id = ..., field = value, ... }` as a record.
    public init(lua value: LuaValue) throws {
        guard case .object(var fields) = try RepositoryService.recordValue(value, path: "record") else {
            throw RepositoryServiceError("a record is a table with an id and named fields, like { id = 1, name = \"Ada\" } (got \(value.typeName))")
        }
        guard let id = fields.removeValue(forKey: "id"), id.isIdentity else {
            throw RepositoryServiceError("a record needs an 'id' that is an integer or a string (got \(value["id"]?.typeName ?? "nil"))")
        }
        self.init(id: id, fields: fields)
    }

    /// The record as a Lua table, `id` included.
    public var lua: LuaValue {
        var t = LuaTable()
        for (k, v) in fields { t[k] = RepositoryService.luaValue(v) }
        t["id"] = RepositoryService.luaValue(id)
        return .table(t)
    }
}

extension RecordValue {
    /// Whether this value can be a record's identity (an integer or a string).
    var isIdentity: Bool {
        switch self {
        case .int, .string: true
        default: false
        }
    }
}

/// A repository call that cannot run as asked; the message names the service and the fix.
public struct RepositoryServiceError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

// MARK: - Registering repositories with a host

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
            name: name, repository: repository, executor: executor ?? SerialQueueExecutor(label: "moonflow.repository.\(name)"),
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
            name: name, repository: repository, executor: executor ?? SerialQueueExecutor(label: "moonflow.repository.\(name)"),
            toLua: { try LuaValueEncoder().encode($0) },
            fromLua: { try LuaValueDecoder().decode(Model.self, from: $0) },
            id: { try LuaValueDecoder().decode(Model.ID.self, from: RepositoryService.luaValue($0)) })
        register(repositoryService: service)
    }

    /// Exposes an already built `RepositoryService` under its name to every feature loaded afterwards.
    public func register(repositoryService service: RepositoryService) {
        let classes = RepositoryClassCache()
        register(serviceObject: service.name) { host, _ in .object(service, try classes.luaClass(host)) }
    }

    /// Makes `repositories = { NAME = { seed = {...} } }` in a feature definition give that
    /// feature a repository per NAME as `env.services.NAME` (it wins over a host service of the
    /// same name): a fresh, seeded in-memory one, or with `sqlite = "FILE.db"` (and `indexes`) a
    /// SQLite table NAME in that file, seeded when the table is made and shared by every feature
    /// of this host that declares it. `configuration.repositoryStorage` says where the files are.
    func registerDeclaredRepositories() {
        let classes = RepositoryClassCache()
        let made = DeclaredRepositories()
        register(serviceObjects: { host, definition in
            let folder = host.pluginSource.map { ($0 as NSString).deletingLastPathComponent } ?? "."
            return try RepositoryDeclaration.all(in: definition, lua: host.lua).map { declaration in
                let repository = try made.repository(declaration, storage: host.configuration.repositoryStorage, pluginFolder: folder)
                let name = declaration.name
                let service = RepositoryService(
                    name: name, repository: repository, executor: SerialQueueExecutor(label: "moonflow.repository.\(name)"),
                    toLua: { $0.lua }, fromLua: { try LuaRecord(lua: $0) },
                    id: { v in
                        guard v.isIdentity else { throw RepositoryServiceError("\(name): an id is an integer or a string (got \(v))") }
                        return v
                    })
                return (name, .object(service, try classes.luaClass(host)))
            }
        })
    }

    /// A `Record` id from a Lua id: strings as they are, integers in decimal.
    static func recordID(_ value: RecordValue) throws -> String {
        switch value {
        case .string(let s): return s
        case .int(let i): return String(i)
        default: throw RepositoryServiceError("a record id is an integer or a string (got \(value))")
        }
    }
}

/// The `moonflow.repository` userdata class, made once per host on first use.
///
/// **Threading:** used on the host's state executor only.
final class RepositoryClassCache: @unchecked Sendable {
    private var cached: (host: ObjectIdentifier, luaClass: LuaClass)?

    func luaClass(_ host: FeatureHost) throws -> LuaClass {
        if let cached, cached.host == ObjectIdentifier(host) { return cached.luaClass }
        let luaClass = try host.lua.makeClass("moonflow.repository", methods: RepositoryService.methods(host.bridge))
        cached = (ObjectIdentifier(host), luaClass)
        return luaClass
    }
}
