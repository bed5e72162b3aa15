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
    /// Where its calls wait their turn: one at a time, in the order made.
    private let calls = CallsInOrder()

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
        let get = CRUD.get(repository, executor: executor)
        let getAll = CRUD.getAll(repository, executor: executor)
        let put = CRUD.put(repository, executor: executor)
        let putAll = CRUD.putAll(repository, executor: executor)
        let delete = CRUD.delete(repository, executor: executor)
        let deleteAll = CRUD.deleteAll(repository, executor: executor)
        @Sendable func list(_ models: [Model]) throws -> LuaValue {
            .table(LuaTable(array: try models.map(toLua), isJSONArray: true))
        }
        run = { call in
            switch call {
            case .get(let target):
                let found: Model?
                switch target {
                case .id(let v): found = try await get.execute(.id(try id(v)))
                case .query(let q): found = try await get.execute(.query(q))
                case .ids:
                    throw RepositoryServiceError(
                        "\(name):get takes { id = ... } or a query, not ids; use getAll{ ids = {...} }")
                }
                guard let found else {
                    throw RepositoryServiceError("\(name):get found nothing for \(target.description)")
                }
                return try toLua(found)
            case .getAll(let target):
                switch target {
                case .id(let v): return try list(try await getAll.execute(.ids([try id(v)])))
                case .ids(let vs): return try list(try await getAll.execute(.ids(try vs.map(id))))
                case .query(let q): return try list(try await getAll.execute(.query(q)))
                }
            case .put(let value, let query):
                let model = try fromLua(value)
                if let query { return try toLua(try await put.execute(.replacing(query, with: model))) }
                return try toLua(try await put.execute(.byID(model)))
            case .putAll(let values, let query):
                let models = try values.map(fromLua)
                if let query { return try list(try await putAll.execute(.replacing(query, with: models))) }
                return try list(try await putAll.execute(.byID(models)))
            case .delete(let target):
                switch target {
                case .id(let v): return .boolean(try await delete.execute(.id(try id(v))))
                case .query(let q): return .boolean(try await delete.execute(.query(q)))
                case .ids:
                    throw RepositoryServiceError(
                        "\(name):delete takes { id = ... } or a query, not ids; use deleteAll{ ids = {...} }")
                }
            case .deleteAll(let target):
                switch target {
                case .id(let v): return .integer(Int64(try await deleteAll.execute(.ids([try id(v)]))))
                case .ids(let vs): return .integer(Int64(try await deleteAll.execute(.ids(try vs.map(id)))))
                case .query(let q): return .integer(Int64(try await deleteAll.execute(.query(q))))
                }
            }
        }
    }

    /// The call's result as a cold stream: the use case runs when it is started, after the
    /// calls started before it (`CallsInOrder`). It is queued as the stream starts, on the
    /// state executor in the order the feature's effects start, not as a task gets a thread.
    func stream(_ call: Call) -> Producer<LuaValue> {
        let run = self.run, calls = self.calls
        return Producer { observer, lifetime in
            let task = calls.enqueue({ try await run(call) }) { result in
                switch result {
                case .success(let value):
                    observer.send(value: value)
                    observer.sendCompleted()
                case .failure(let error):
                    observer.sendFailed(error)
                }
            }
            lifetime.observeEnded { task.cancel() }
        }
        .catchError { error in .fail(LuaStreamError(message: String(describing: error))) }
    }
}
