/// Harmony's default use cases over a `Repository`: get, getAll, put, putAll, delete and
/// deleteAll, each a `UseCase` whose input says what to act on, running on an injectable
/// `Executor`.
///
///     let repository = InMemoryRepository<Record>()
///     let db = SerialQueueExecutor(label: "db")
///     let put = CRUD.put(repository, executor: db)
///     let getAll = CRUD.getAll(repository, executor: db)
///     try await put.execute(.byID(Record(id: "1", fields: ["name": "Ada"])))
///     let everyone = try await getAll.execute(.query(.all))
///
/// Being `UseCase`s, they have both forms of `execute`: `async` (suspends while the executor
/// runs the call) and blocking (for composing inside another use case's body; runs inline when
/// already on that executor).
///
/// **Threading**: any thread or task; the repository call runs on the executor.
public enum CRUD {
    /// One model: by identity, or the first a query returns.
    public enum One<ID: Sendable>: Sendable {
        case id(ID)
        case query(Query)
    }

    /// Many models: by identities (in their order), or every one a query returns.
    public enum Many<ID: Sendable>: Sendable {
        case ids([ID])
        case query(Query)
    }

    /// What to store: `value` under its own id(s), or in place of what a query matches.
    public enum Write<Value: Sendable>: Sendable {
        case byID(Value)
        case replacing(Query, with: Value)
    }

    /// Reads one model: the model with that identity or the first the query returns, or nil.
    public static func get<Model: Identifiable & Sendable>(
        _ repository: any Repository<Model>, executor: any Executor = DirectExecutor.shared
    ) -> UseCase<One<Model.ID>, Model?> where Model.ID: Sendable {
        UseCase(executor: executor) { target in
            switch target {
            case .id(let id): try repository.get(id: id)
            case .query(let query): try repository.get(query)
            }
        }
    }

    /// Reads many models: those of these identities that exist, in their order, or every model
    /// the query returns.
    public static func getAll<Model: Identifiable & Sendable>(
        _ repository: any Repository<Model>, executor: any Executor = DirectExecutor.shared
    ) -> UseCase<Many<Model.ID>, [Model]> where Model.ID: Sendable {
        UseCase(executor: executor) { target in
            switch target {
            case .ids(let ids): try repository.getAll(ids: ids)
            case .query(let query): try repository.getAll(query)
            }
        }
    }

    /// Stores one model, inserting or replacing it by its id, or in place of what a query matches.
    public static func put<Model: Identifiable & Sendable>(
        _ repository: any Repository<Model>, executor: any Executor = DirectExecutor.shared
    ) -> UseCase<Write<Model>, Model> where Model.ID: Sendable {
        UseCase(executor: executor) { write in
            switch write {
            case .byID(let model): try repository.put(model)
            case .replacing(let query, let model): try repository.put(model, replacing: query)
            }
        }
    }

    /// Stores many models, each inserted or replaced by its id, or in place of what a query matches.
    public static func putAll<Model: Identifiable & Sendable>(
        _ repository: any Repository<Model>, executor: any Executor = DirectExecutor.shared
    ) -> UseCase<Write<[Model]>, [Model]> where Model.ID: Sendable {
        UseCase(executor: executor) { write in
            switch write {
            case .byID(let models): try repository.putAll(models)
            case .replacing(let query, let models): try repository.putAll(models, replacing: query)
            }
        }
    }

    /// Deletes one model, by identity or the first a query returns; answers whether there was one.
    public static func delete<Model: Identifiable & Sendable>(
        _ repository: any Repository<Model>, executor: any Executor = DirectExecutor.shared
    ) -> UseCase<One<Model.ID>, Bool> where Model.ID: Sendable {
        UseCase(executor: executor) { target in
            switch target {
            case .id(let id): try repository.delete(id: id)
            case .query(let query): try repository.delete(query)
            }
        }
    }

    /// Deletes many models, by identities or every one a query returns; answers how many there were.
    public static func deleteAll<Model: Identifiable & Sendable>(
        _ repository: any Repository<Model>, executor: any Executor = DirectExecutor.shared
    ) -> UseCase<Many<Model.ID>, Int> where Model.ID: Sendable {
        UseCase(executor: executor) { target in
            switch target {
            case .ids(let ids): try repository.deleteAll(ids: ids)
            case .query(let query): try repository.deleteAll(query)
            }
        }
    }
}
