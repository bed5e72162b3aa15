import Streams
/// A `Repository` kept in memory, in insertion order; the reference for query semantics.
///
///     let posts = InMemoryRepository<Record>([Record(id: "p1", fields: ["user": 1])])
///     let mine = try posts.getAll(.where("user", equals: 1))
///
/// **Threading**: any thread; every call holds one lock for its whole duration, so each is atomic.
public final class InMemoryRepository<Model: Identifiable & Sendable & Queryable>: Repository
where Model.ID: Sendable {
    private struct Storage {
        var order: [Model.ID] = []
        var models: [Model.ID: Model] = [:]

        var all: [Model] { order.compactMap { models[$0] } }

        mutating func put(_ model: Model) {
            if models.updateValue(model, forKey: model.id) == nil { order.append(model.id) }
        }

        @discardableResult
        mutating func remove(_ id: Model.ID) -> Bool {
            guard models.removeValue(forKey: id) != nil else { return false }
            order.removeAll { $0 == id }
            return true
        }
    }

    private let storage = Locked(Storage())

    /// Creates a repository holding `models`.
    ///
    /// - Parameter models: Initial contents; a later duplicate id replaces an earlier one.
    public init(_ models: [Model] = []) {
        storage.withLock { storage in models.forEach { storage.put($0) } }
    }

    public func get(id: Model.ID) throws -> Model? {
        storage.withLock { $0.models[id] }
    }

    public func getAll(ids: [Model.ID]) throws -> [Model] {
        storage.withLock { storage in ids.compactMap { storage.models[$0] } }
    }

    public func getAll(_ query: Query) throws -> [Model] {
        try query.apply(to: storage.withLock { $0.all })
    }

    @discardableResult
    public func put(_ model: Model) throws -> Model {
        storage.withLock { $0.put(model) }
        return model
    }

    @discardableResult
    public func putAll(_ models: [Model]) throws -> [Model] {
        storage.withLock { storage in models.forEach { storage.put($0) } }
        return models
    }

    @discardableResult
    public func putAll(_ models: [Model], replacing query: Query) throws -> [Model] {
        try storage.withLock { storage in
            for stale in try query.apply(to: storage.all) { storage.remove(stale.id) }
            models.forEach { storage.put($0) }
        }
        return models
    }

    @discardableResult
    public func delete(id: Model.ID) throws -> Bool {
        storage.withLock { $0.remove(id) }
    }

    @discardableResult
    public func deleteAll(ids: [Model.ID]) throws -> Int {
        storage.withLock { storage in ids.reduce(0) { $0 + (storage.remove($1) ? 1 : 0) } }
    }

    @discardableResult
    public func deleteAll(_ query: Query) throws -> Int {
        try storage.withLock { storage in
            let doomed = try query.apply(to: storage.all)
            doomed.forEach { storage.remove($0.id) }
            return doomed.count
        }
    }
}
