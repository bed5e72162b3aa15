/// Harmony's default use cases over a `Repository`: `Get`, `GetAll`, `Put`, `PutAll`, `Delete`,
/// `DeleteAll`, each by id and by `Query`, each running on an injectable `Executor`.
///
///     let repository = InMemoryRepository<Record>()
///     let db = SerialQueueExecutor(label: "db")
///     let put = CRUD.Put(repository, executor: db)
///     let getAll = CRUD.GetAll(repository, executor: db)
///     try await put.execute(Record(id: "1", fields: ["name": "Ada"]))
///     let everyone = try await getAll.execute(.all)
///
/// Every `execute` comes in two forms: `async` (suspends while the executor runs the call) and
/// blocking (for composing inside another use case's body; runs inline when already on that executor).
///
/// **Threading**: any thread or task; the repository call runs on the executor.
public enum CRUD {
    /// Reads one model by id or by query.
    public struct Get<Model: Identifiable & Sendable>: RepositoryUseCase where Model.ID: Sendable {
        public let repository: any Repository<Model>
        public let executor: any Executor
        /// - Parameters:
        ///   - repository: Where models live.
        ///   - executor: Where calls run unless `execute(..., on:)` says otherwise.
        public init(_ repository: any Repository<Model>, executor: any Executor = DirectExecutor.shared) {
            self.repository = repository
            self.executor = executor
        }
        /// The model with identity `id`, or nil.
        public func execute(id: Model.ID, on executor: (any Executor)? = nil) async throws -> Model? {
            try await run(executor) { try $0.get(id: id) }
        }
        /// The model with identity `id`, or nil (blocking).
        public func execute(id: Model.ID, on executor: (any Executor)? = nil) throws -> Model? {
            try runBlocking(executor) { try $0.get(id: id) }
        }
        /// The first model `query` returns, or nil.
        public func execute(_ query: Query, on executor: (any Executor)? = nil) async throws -> Model? {
            try await run(executor) { try $0.get(query) }
        }
        /// The first model `query` returns, or nil (blocking).
        public func execute(_ query: Query, on executor: (any Executor)? = nil) throws -> Model? {
            try runBlocking(executor) { try $0.get(query) }
        }
    }

    /// Reads many models by ids or by query.
    public struct GetAll<Model: Identifiable & Sendable>: RepositoryUseCase where Model.ID: Sendable {
        public let repository: any Repository<Model>
        public let executor: any Executor
        public init(_ repository: any Repository<Model>, executor: any Executor = DirectExecutor.shared) {
            self.repository = repository
            self.executor = executor
        }
        /// The models with these identities that exist, in the order of `ids`.
        public func execute(ids: [Model.ID], on executor: (any Executor)? = nil) async throws -> [Model] {
            try await run(executor) { try $0.getAll(ids: ids) }
        }
        /// The models with these identities that exist (blocking).
        public func execute(ids: [Model.ID], on executor: (any Executor)? = nil) throws -> [Model] {
            try runBlocking(executor) { try $0.getAll(ids: ids) }
        }
        /// Every model `query` returns.
        public func execute(_ query: Query = .all, on executor: (any Executor)? = nil) async throws -> [Model] {
            try await run(executor) { try $0.getAll(query) }
        }
        /// Every model `query` returns (blocking).
        public func execute(_ query: Query = .all, on executor: (any Executor)? = nil) throws -> [Model] {
            try runBlocking(executor) { try $0.getAll(query) }
        }
    }

    /// Stores one model under its own id, or in place of what a query matches.
    public struct Put<Model: Identifiable & Sendable>: RepositoryUseCase where Model.ID: Sendable {
        public let repository: any Repository<Model>
        public let executor: any Executor
        public init(_ repository: any Repository<Model>, executor: any Executor = DirectExecutor.shared) {
            self.repository = repository
            self.executor = executor
        }
        /// Inserts or replaces `model` by its id.
        @discardableResult
        public func execute(_ model: Model, on executor: (any Executor)? = nil) async throws -> Model {
            try await run(executor) { try $0.put(model) }
        }
        /// Inserts or replaces `model` by its id (blocking).
        @discardableResult
        public func execute(_ model: Model, on executor: (any Executor)? = nil) throws -> Model {
            try runBlocking(executor) { try $0.put(model) }
        }
        /// Replaces what `query` matches with `model`.
        @discardableResult
        public func execute(_ model: Model, replacing query: Query, on executor: (any Executor)? = nil) async throws -> Model {
            try await run(executor) { try $0.put(model, replacing: query) }
        }
        /// Replaces what `query` matches with `model` (blocking).
        @discardableResult
        public func execute(_ model: Model, replacing query: Query, on executor: (any Executor)? = nil) throws -> Model {
            try runBlocking(executor) { try $0.put(model, replacing: query) }
        }
    }

    /// Stores many models under their own ids, or in place of what a query matches.
    public struct PutAll<Model: Identifiable & Sendable>: RepositoryUseCase where Model.ID: Sendable {
        public let repository: any Repository<Model>
        public let executor: any Executor
        public init(_ repository: any Repository<Model>, executor: any Executor = DirectExecutor.shared) {
            self.repository = repository
            self.executor = executor
        }
        /// Inserts or replaces each model by its id.
        @discardableResult
        public func execute(_ models: [Model], on executor: (any Executor)? = nil) async throws -> [Model] {
            try await run(executor) { try $0.putAll(models) }
        }
        /// Inserts or replaces each model by its id (blocking).
        @discardableResult
        public func execute(_ models: [Model], on executor: (any Executor)? = nil) throws -> [Model] {
            try runBlocking(executor) { try $0.putAll(models) }
        }
        /// Replaces what `query` matches with `models`.
        @discardableResult
        public func execute(_ models: [Model], replacing query: Query, on executor: (any Executor)? = nil) async throws -> [Model] {
            try await run(executor) { try $0.putAll(models, replacing: query) }
        }
        /// Replaces what `query` matches with `models` (blocking).
        @discardableResult
        public func execute(_ models: [Model], replacing query: Query, on executor: (any Executor)? = nil) throws -> [Model] {
            try runBlocking(executor) { try $0.putAll(models, replacing: query) }
        }
    }

    /// Deletes one model by id or the first a query returns.
    public struct Delete<Model: Identifiable & Sendable>: RepositoryUseCase where Model.ID: Sendable {
        public let repository: any Repository<Model>
        public let executor: any Executor
        public init(_ repository: any Repository<Model>, executor: any Executor = DirectExecutor.shared) {
            self.repository = repository
            self.executor = executor
        }
        /// Deletes the model with identity `id`; returns whether it existed.
        @discardableResult
        public func execute(id: Model.ID, on executor: (any Executor)? = nil) async throws -> Bool {
            try await run(executor) { try $0.delete(id: id) }
        }
        /// Deletes the model with identity `id` (blocking); returns whether it existed.
        @discardableResult
        public func execute(id: Model.ID, on executor: (any Executor)? = nil) throws -> Bool {
            try runBlocking(executor) { try $0.delete(id: id) }
        }
        /// Deletes the first model `query` returns; returns whether there was one.
        @discardableResult
        public func execute(_ query: Query, on executor: (any Executor)? = nil) async throws -> Bool {
            try await run(executor) { try $0.delete(query) }
        }
        /// Deletes the first model `query` returns (blocking); returns whether there was one.
        @discardableResult
        public func execute(_ query: Query, on executor: (any Executor)? = nil) throws -> Bool {
            try runBlocking(executor) { try $0.delete(query) }
        }
    }

    /// Deletes many models by ids or every model a query returns.
    public struct DeleteAll<Model: Identifiable & Sendable>: RepositoryUseCase where Model.ID: Sendable {
        public let repository: any Repository<Model>
        public let executor: any Executor
        public init(_ repository: any Repository<Model>, executor: any Executor = DirectExecutor.shared) {
            self.repository = repository
            self.executor = executor
        }
        /// Deletes the models with these identities; returns how many existed.
        @discardableResult
        public func execute(ids: [Model.ID], on executor: (any Executor)? = nil) async throws -> Int {
            try await run(executor) { try $0.deleteAll(ids: ids) }
        }
        /// Deletes the models with these identities (blocking); returns how many existed.
        @discardableResult
        public func execute(ids: [Model.ID], on executor: (any Executor)? = nil) throws -> Int {
            try runBlocking(executor) { try $0.deleteAll(ids: ids) }
        }
        /// Deletes every model `query` returns; returns how many.
        @discardableResult
        public func execute(_ query: Query = .all, on executor: (any Executor)? = nil) async throws -> Int {
            try await run(executor) { try $0.deleteAll(query) }
        }
        /// Deletes every model `query` returns (blocking); returns how many.
        @discardableResult
        public func execute(_ query: Query = .all, on executor: (any Executor)? = nil) throws -> Int {
            try runBlocking(executor) { try $0.deleteAll(query) }
        }
    }
}

/// What every `CRUD` use case shares: a repository, a default executor, and how a call runs.
public protocol RepositoryUseCase: Sendable {
    associatedtype Model: Identifiable & Sendable where Model.ID: Sendable
    /// Where models live.
    var repository: any Repository<Model> { get }
    /// Where calls run unless told otherwise.
    var executor: any Executor { get }
}

extension RepositoryUseCase {
    func run<T: Sendable>(
        _ executor: (any Executor)?, _ call: @escaping @Sendable (any Repository<Model>) throws -> T
    ) async throws -> T {
        let repository = self.repository
        return try await (executor ?? self.executor).submit { try call(repository) }
    }

    func runBlocking<T>(_ executor: (any Executor)?, _ call: (any Repository<Model>) throws -> T) throws -> T {
        try (executor ?? self.executor).perform { try call(repository) }
    }
}
