/// Storage of identifiable models with get/put/delete by id and by `Query` (Harmony's repository).
///
///     let users = InMemoryRepository<Record>()
///     try users.put(Record(id: "1", fields: ["name": "Ada"]))
///     let ada = try users.get(id: "1")
///     try users.deleteAll(.where("name", equals: "Ada"))
///
/// Implementations: `InMemoryRepository`; a SQLite one stores `Record`s; the Lua bridge exposes
/// `any Repository<Record>`.
///
/// **Threading**: implementations are `Sendable` and callable from any thread; each call is atomic.
/// Run them on an `Executor` through the `CRUD` use cases to choose where the work happens.
public protocol Repository<Model>: Sendable {
    associatedtype Model: Identifiable & Sendable where Model.ID: Sendable

    /// The model with identity `id`, or nil.
    func get(id: Model.ID) throws -> Model?
    /// The first model `query` returns, or nil.
    func get(_ query: Query) throws -> Model?
    /// The models with these identities that exist, in the order of `ids`.
    func getAll(ids: [Model.ID]) throws -> [Model]
    /// Every model `query` returns, in query order.
    func getAll(_ query: Query) throws -> [Model]

    /// Inserts or replaces `model` (by its id) and returns it as stored.
    @discardableResult func put(_ model: Model) throws -> Model
    /// Inserts or replaces each model, in order, atomically.
    @discardableResult func putAll(_ models: [Model]) throws -> [Model]
    /// Replaces every model `query` matches with `models`, atomically (caches a query's results).
    @discardableResult func putAll(_ models: [Model], replacing query: Query) throws -> [Model]

    /// Deletes the model with identity `id`; returns whether one existed.
    @discardableResult func delete(id: Model.ID) throws -> Bool
    /// Deletes the first model `query` returns; returns whether one existed.
    @discardableResult func delete(_ query: Query) throws -> Bool
    /// Deletes the models with these identities; returns how many existed.
    @discardableResult func deleteAll(ids: [Model.ID]) throws -> Int
    /// Deletes every model `query` returns; returns how many.
    @discardableResult func deleteAll(_ query: Query) throws -> Int
}

extension Repository {
    public func get(_ query: Query) throws -> Model? {
        var first = query
        first.limit = min(query.limit ?? 1, 1)
        return try getAll(first).first
    }

    /// Deletes the first model `query` returns, through `deleteAll` limited to one.
    @discardableResult
    public func delete(_ query: Query) throws -> Bool {
        var first = query
        first.limit = min(query.limit ?? 1, 1)
        return try deleteAll(first) == 1
    }

    /// Replaces every model `query` matches with `model`.
    @discardableResult
    public func put(_ model: Model, replacing query: Query) throws -> Model {
        try putAll([model], replacing: query)[0]
    }
}

/// Why a repository call failed.
public enum RepositoryError: Error, Equatable, CustomStringConvertible {
    /// The query cannot run (a negative limit, an unknown field for a typed store); the text says why.
    case invalidQuery(String)
    /// The backing store failed; the text carries its message.
    case storage(String)

    public var description: String {
        switch self {
        case .invalidQuery(let why): "invalid query: \(why); fix the query's filters, order or limit"
        case .storage(let why): "storage failed: \(why)"
        }
    }
}
