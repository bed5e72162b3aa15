import Foundation
import GRDB
import Runtime

/// A `Repository` kept in one table of a SQLite file, through GRDB: what outlives the process.
///
///     let users = try SQLiteRepository<Record>(path: "data/app.db", table: "users", indexes: ["team"])
///     try users.put(Record(id: "1", fields: ["name": "Ada", "team": "core"]))
///     let core = try users.getAll(Query.where("team", equals: "core").sorted(by: "name"))
///
/// The table holds `id` (the primary key, an integer or a string), `seq` (insertion order, which
/// a put of an existing id keeps) and `fields` (the other fields as JSON text). Queries run in
/// SQL, with the same results as `InMemoryRepository` for the same calls; each field in
/// `indexes` gets an index that its equality filters and orderings use. `putAll`,
/// `putAll(_:replacing:)`, `deleteAll` and every other call are one transaction each: a failed
/// call keeps nothing of what it wrote.
///
/// The table and its indexes are made, and `seed` is stored, by GRDB's `DatabaseMigrator` on the
/// first call: a field added to `indexes` later gets its index then, without touching the rows.
///
/// **Threading**: any thread; writes are serialized, reads run beside them.
public final class SQLiteRepository<Model: Identifiable & Sendable>: Repository where Model.ID: Sendable {
    /// The file (or in-memory database) the table is in.
    public let database: SQLiteDatabase
    /// The table's name.
    public let table: String
    /// The fields with an index, as declared.
    public let indexes: [String]
    private let coding: SQLiteRowCoding<Model>
    private let migrator: DatabaseMigrator
    private let prepared = PreparedOnce()
    private let upsert: String
    private let quotedTable: String

    /// A repository over `table` in `database`; nothing is opened until the first call.
    ///
    /// - Parameters:
    ///   - database: Where the table lives.
    ///   - table: The table's name (not starting with `sqlite_` or `grdb_`).
    ///   - indexes: Fields to index (their equality filters and orderings use the index).
    ///   - seed: Models stored when the table is made (an existing table is left as it is).
    ///   - coding: How a model maps to an id and fields.
    /// - Throws: `SQLiteSchemaError` for a table or index name SQLite cannot take.
    public init(
        database: SQLiteDatabase, table: String, indexes: [String] = [], seed: [Model] = [],
        coding: SQLiteRowCoding<Model>
    ) throws {
        let lowered = table.lowercased()
        guard !table.isEmpty, !lowered.hasPrefix("sqlite_"), !lowered.hasPrefix("grdb_") else {
            throw SQLiteSchemaError(
                "'\(table)' cannot be a table name (SQLite and GRDB reserve empty names and the prefixes sqlite_ and grdb_); rename the repository"
            )
        }
        var fields: [SQLField] = []
        for name in indexes where name != "id" {
            guard !name.isEmpty, let field = SQLField(name) else {
                throw SQLiteSchemaError(
                    "'\(name)' cannot be an indexed field of \(table) (it is empty, or has a double quote, a backslash or a control character); index a field with a plainer name"
                )
            }
            if !fields.contains(where: { $0.name == name }) { fields.append(field) }
        }
        self.database = database
        self.table = table
        self.indexes = indexes
        self.coding = coding
        quotedTable = SQLName.quoted(table)
        upsert =
            "INSERT INTO \(quotedTable) (id, seq, fields) VALUES (?, ?, ?) ON CONFLICT(id) DO UPDATE SET fields = excluded.fields"

        // The migrations of this table; other tables in the file have their own, which GRDB
        // records beside these and which never run here.
        var migrator = DatabaseMigrator()
        let quotedTable = self.quotedTable, upsert = self.upsert
        let path = database.path
        migrator.registerMigration("moonflow.table \(table)") { db in
            try db.execute(
                sql:
                    "CREATE TABLE \(quotedTable) (id PRIMARY KEY NOT NULL, seq INTEGER NOT NULL UNIQUE, fields TEXT NOT NULL)"
            )
            let statement = try db.makeStatement(sql: upsert)
            for (seq, model) in seed.enumerated() {
                let row = try Self.stored(model, coding: coding, path: path, table: table)
                try statement.execute(arguments: [row.id, Int64(seq + 1), row.fields])
            }
        }
        for field in fields {
            migrator.registerMigration("moonflow.index \(table).\(field.name)") { db in
                try db.execute(sql: field.indexStatement(table: table))
            }
        }
        self.migrator = migrator
    }

    // MARK: - Reading

    public func get(id: Model.ID) throws -> Model? {
        let key = try idValue(try coding.id(id))
        return try read(oneStatement: true) { db in
            try self.models(db, "SELECT id, fields FROM \(self.quotedTable) WHERE id = ?", [key]).first
        }
    }

    public func getAll(ids: [Model.ID]) throws -> [Model] {
        let keys = try ids.map { try idValue(try coding.id($0)) }
        let found: [DatabaseValue: Model] = try read(oneStatement: keys.count <= 500) { db in
            var found: [DatabaseValue: Model] = [:]
            for chunk in keys.chunked(500) {
                let marks = Array(repeating: "?", count: chunk.count).joined(separator: ", ")
                try self.forEachRow(
                    db, "SELECT id, fields FROM \(self.quotedTable) WHERE id IN (\(marks))", StatementArguments(chunk)
                ) { id, fields in
                    found[id] = try self.model(id, fields)
                }
            }
            return found
        }
        return keys.compactMap { found[$0] }
    }

    public func getAll(_ query: Query) throws -> [Model] {
        try query.validate()
        let sql = SQLQuery(query)
        return try read(oneStatement: true) { db in
            let select = sql.select(from: self.table)
            guard sql.needsSwift else { return try self.models(db, select.sql, select.arguments) }
            return try self.swiftSide(db, sql).map { try self.model($0.id, $0.fields) }
        }
    }

    // MARK: - Writing

    @discardableResult
    public func put(_ model: Model) throws -> Model {
        try putAll([model])[0]
    }

    @discardableResult
    public func putAll(_ models: [Model]) throws -> [Model] {
        let rows = try models.map { try Self.stored($0, coding: coding, path: database.path, table: table) }
        try write { db in try self.store(db, rows) }
        return models
    }

    @discardableResult
    public func putAll(_ models: [Model], replacing query: Query) throws -> [Model] {
        try query.validate()
        let rows = try models.map { try Self.stored($0, coding: coding, path: database.path, table: table) }
        try write { db in
            _ = try self.delete(db, SQLQuery(query))
            try self.store(db, rows)
        }
        return models
    }

    @discardableResult
    public func delete(id: Model.ID) throws -> Bool {
        try deleteAll(ids: [id]) == 1
    }

    @discardableResult
    public func deleteAll(ids: [Model.ID]) throws -> Int {
        let keys = try ids.map { try idValue(try coding.id($0)) }
        return try write { db in try self.delete(db, ids: keys) }
    }

    @discardableResult
    public func deleteAll(_ query: Query) throws -> Int {
        try query.validate()
        return try write { db in try self.delete(db, SQLQuery(query)) }
    }

    // MARK: - Rows

    /// Runs `body` after the table is ready, on a reader (see `SQLiteDatabase.read`).
    private func read<T>(oneStatement: Bool = false, _ body: (Database) throws -> T) throws -> T {
        try prepare()
        return try database.read(oneStatement: oneStatement, body)
    }

    /// Runs `body` after the table is ready, in one write transaction.
    private func write<T>(_ body: (Database) throws -> T) throws -> T {
        try prepare()
        return try database.write(body)
    }

    /// Makes the table and its indexes on first use (again after a failure).
    private func prepare() throws {
        try prepared.run {
            try database.mapErrors {
                let writer = try database.writer()
                if try writer.read(migrator.hasCompletedMigrations) { return }
                try migrator.migrate(writer)
            }
        }
    }

    /// Inserts or replaces `rows`, new ids after every stored one.
    private func store(_ db: Database, _ rows: [(id: DatabaseValue, fields: String)]) throws {
        guard !rows.isEmpty else { return }
        var seq = try Int64.fetchOne(db.cachedStatement(sql: "SELECT coalesce(max(seq), 0) FROM \(quotedTable)")) ?? 0
        let statement = try db.cachedStatement(sql: upsert)
        for row in rows {
            seq += 1
            try statement.execute(arguments: [row.id, seq, row.fields])
        }
    }

    /// Deletes what `sql` selects; returns how many rows went.
    private func delete(_ db: Database, _ sql: SQLQuery) throws -> Int {
        if sql.needsSwift {
            return try delete(db, ids: try swiftSide(db, sql).map { try idValue($0.id) })
        }
        if sql.query.order.isEmpty, sql.query.limit == nil, sql.query.offset == 0 {
            try db.execute(
                sql: "DELETE FROM \(quotedTable)\(sql.whereClause)", arguments: StatementArguments(sql.arguments))
        } else {
            let select = sql.select(from: table, columns: "id")
            try db.execute(sql: "DELETE FROM \(quotedTable) WHERE id IN (\(select.sql))", arguments: select.arguments)
        }
        return db.changesCount
    }

    /// Deletes the rows with these ids; returns how many went.
    private func delete(_ db: Database, ids: [DatabaseValue]) throws -> Int {
        var count = 0
        for chunk in ids.chunked(500) {
            let marks = Array(repeating: "?", count: chunk.count).joined(separator: ", ")
            try db.execute(
                sql: "DELETE FROM \(quotedTable) WHERE id IN (\(marks))", arguments: StatementArguments(chunk))
            count += db.changesCount
        }
        return count
    }

    /// The rows a query that SQL cannot fully express returns: SQL narrows, Swift finishes.
    private func swiftSide(_ db: Database, _ sql: SQLQuery) throws -> [StoredRow] {
        let select = sql.select(from: table)
        var candidates: [StoredRow] = []
        try forEachRow(db, select.sql, select.arguments) { id, fields in
            candidates.append(StoredRow(id: try self.recordID(id), fields: try self.fields(id, fields)))
        }
        return try sql.query.apply(to: candidates)
    }

    private func models(_ db: Database, _ sql: String, _ arguments: StatementArguments) throws -> [Model] {
        var models: [Model] = []
        try forEachRow(db, sql, arguments) { id, fields in models.append(try self.model(id, fields)) }
        return models
    }

    /// Calls `body` with each row's `id` and `fields` columns.
    private func forEachRow(
        _ db: Database, _ sql: String, _ arguments: StatementArguments,
        _ body: (DatabaseValue, DatabaseValue) throws -> Void
    ) throws {
        let rows = try Row.fetchCursor(db.cachedStatement(sql: sql), arguments: arguments)
        while let row = try rows.next() {
            try body(row[0], row[1])
        }
    }

    private func model(_ id: DatabaseValue, _ fields: DatabaseValue) throws -> Model {
        try model(try recordID(id), try self.fields(id, fields))
    }

    private func model(_ recordID: RecordValue, _ fields: [String: RecordValue]) throws -> Model {
        do {
            return try coding.decode(recordID, fields)
        } catch {
            throw RepositoryError.storage(
                "\(database.path): the row \(recordID.shown) of \(table) does not make a \(Model.self) (\(error)); fix the row or the model"
            )
        }
    }

    private func recordID(_ id: DatabaseValue) throws -> RecordValue {
        switch id.storage {
        case .int64(let i): return .int(Int(i))
        case .string(let s): return .string(s)
        default:
            throw RepositoryError.storage(
                "\(database.path): \(table) has a row whose id \(id) is neither an integer nor a string; fix or delete that row"
            )
        }
    }

    private func fields(_ id: DatabaseValue, _ fields: DatabaseValue) throws -> [String: RecordValue] {
        guard case .string(let text) = fields.storage else {
            throw RepositoryError.storage(
                "\(database.path): the row \(id) of \(table) has no JSON fields; fix or delete that row")
        }
        do {
            return try StoredJSON.object(from: text)
        } catch let error as StoredJSON.Malformed {
            throw RepositoryError.storage(
                "\(database.path): the row \(id) of \(table) holds fields that are not valid JSON (\(error.why) at byte \(error.offset)); fix or delete that row"
            )
        }
    }

    private func idValue(_ id: RecordValue) throws -> DatabaseValue {
        switch id {
        case .int(let i): return Int64(i).databaseValue
        case .string(let s): return s.databaseValue
        default:
            throw RepositoryError.storage(
                "\(database.path): an id of \(table) is an integer or a string, not \(id.shown); give the model such an id"
            )
        }
    }

    /// A model as the id and JSON fields of its row.
    private static func stored(
        _ model: Model, coding: SQLiteRowCoding<Model>, path: String, table: String
    ) throws -> (id: DatabaseValue, fields: String) {
        let encoded: (id: RecordValue, fields: [String: RecordValue])
        do {
            encoded = try coding.encode(model)
        } catch {
            throw RepositoryError.storage(
                "\(path): a \(Model.self) for \(table) cannot be stored (\(error)); store only finite numbers, strings, booleans, lists and tables"
            )
        }
        let id: DatabaseValue
        switch encoded.id {
        case .int(let i): id = Int64(i).databaseValue
        case .string(let s): id = s.databaseValue
        default:
            throw RepositoryError.storage(
                "\(path): an id of \(table) is an integer or a string, not \(encoded.id.shown); give the model such an id"
            )
        }
        do {
            return (id, try StoredJSON.text(of: encoded.fields))
        } catch let error as StoredJSON.Unstorable {
            throw RepositoryError.storage(
                "\(path): the record \(encoded.id.shown) of \(table) cannot be stored: its field \(error.path) is \(error.value), which SQLite cannot hold; store a finite number (or a string)"
            )
        }
    }
}

extension SQLiteRepository where Model == Runtime.Record {
    /// A repository of `Record`s in `table` of the file at `path` (or `":memory:"`).
    ///
    ///     let users = try SQLiteRepository<Record>(path: "app.db", table: "users", indexes: ["team"])
    ///
    /// - Throws: `SQLiteSchemaError` for a table or index name SQLite cannot take.
    public convenience init(
        path: String, table: String, indexes: [String] = [], seed: [Runtime.Record] = [],
        options: SQLiteDatabase.Options = .init()
    ) throws {
        try self.init(
            database: SQLiteDatabase(path: path, options: options), table: table, indexes: indexes, seed: seed,
            coding: .records)
    }

    /// A repository of `Record`s in `table` of `database`.
    public convenience init(
        database: SQLiteDatabase, table: String, indexes: [String] = [], seed: [Runtime.Record] = []
    ) throws {
        try self.init(database: database, table: table, indexes: indexes, seed: seed, coding: .records)
    }
}

extension SQLiteRepository where Model: Codable, Model.ID: Codable & Sendable {
    /// A repository of `Codable` models in `table` of the file at `path` (or `":memory:"`); each
    /// model's encoded keys are the fields queries read.
    ///
    ///     struct User: Codable, Identifiable, Sendable { var id: Int; var name: String }
    ///     let users = try SQLiteRepository<User>(path: "app.db", table: "users", indexes: ["name"])
    ///
    /// - Throws: `SQLiteSchemaError` for a table or index name SQLite cannot take.
    public convenience init(
        path: String, table: String, indexes: [String] = [], seed: [Model] = [],
        options: SQLiteDatabase.Options = .init()
    ) throws {
        try self.init(
            database: SQLiteDatabase(path: path, options: options), table: table, indexes: indexes, seed: seed,
            coding: .codable)
    }

    /// A repository of `Codable` models in `table` of `database`.
    public convenience init(database: SQLiteDatabase, table: String, indexes: [String] = [], seed: [Model] = []) throws
    {
        try self.init(database: database, table: table, indexes: indexes, seed: seed, coding: .codable)
    }
}

/// A table or index name SQLite cannot take; the message names it and the fix.
public struct SQLiteSchemaError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// A stored row as `Query.apply` reads it, for the parts of a query only Swift evaluates.
struct StoredRow: Queryable {
    var id: RecordValue
    var fields: [String: RecordValue]
    func fieldValue(_ name: String) -> RecordValue? { name == "id" ? id : fields[name] }
}

/// Runs a step once it has succeeded; a failed step runs again next time.
///
/// **Threading**: any thread; concurrent callers wait for the one running the step.
private final class PreparedOnce: @unchecked Sendable {
    private let lock = NSLock()
    private var done = false

    func run(_ step: () throws -> Void) throws {
        lock.lock()
        defer { lock.unlock() }
        guard !done else { return }
        try step()
        done = true
    }
}

extension RecordValue {
    /// The value as JSON-like text for messages: `4`, `"u1"`, `1.5`.
    var shown: String { (try? StoredJSON.text(of: self)) ?? "\(self)" }
}

extension Array {
    /// The array in consecutive slices of at most `size` elements.
    func chunked(_ size: Int) -> [ArraySlice<Element>] {
        stride(from: 0, to: count, by: size).map { self[$0..<Swift.min($0 + size, count)] }
    }
}
