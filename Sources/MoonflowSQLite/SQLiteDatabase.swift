import Foundation
import GRDB
import MoonflowHost
import Runtime

/// One SQLite file (or an in-memory database) that `SQLiteRepository`s keep their tables in.
///
///     let db = SQLiteDatabase(path: "data/app.db")
///     let users = try SQLiteRepository<Record>(database: db, table: "users", indexes: ["team"])
///     let posts = try SQLiteRepository<Record>(database: db, table: "posts")
///
/// A file is opened as a GRDB `DatabasePool` in WAL mode, so reads run beside a write;
/// `":memory:"` is a private in-memory database (a `DatabaseQueue`), gone when the last
/// repository on it is. Nothing is opened until the first call: a file that cannot be opened
/// (corrupt, locked, in a folder that cannot be made) fails that call with
/// `RepositoryError.storage` naming the file, and the next call tries again.
///
/// **Threading**: any thread. Writes are serialized by GRDB; reads run on a pool of readers.
public final class SQLiteDatabase: Sendable {
    /// How the database is opened.
    public struct Options: Sendable {
        /// How long a write waits for another connection or process to release its lock, in
        /// seconds, before it fails as locked.
        public var busyTimeout: Double
        /// Open for reading only: every write fails as read-only.
        public var readOnly: Bool
        /// The most bytes the file may grow to; a write past it fails as full and keeps nothing.
        public var maximumSize: Int?

        /// - Parameters:
        ///   - busyTimeout: Seconds a write waits for a lock held elsewhere (default 5).
        ///   - readOnly: Open for reading only.
        ///   - maximumSize: A size limit in bytes (nil: none but the disk's).
        public init(busyTimeout: Double = 5, readOnly: Bool = false, maximumSize: Int? = nil) {
            self.busyTimeout = busyTimeout
            self.readOnly = readOnly
            self.maximumSize = maximumSize
        }
    }

    /// The path as given, or `":memory:"`; what error messages name.
    public let path: String
    public let options: Options
    private let opened = OpenedWriter()

    /// Names a database; nothing is opened yet.
    ///
    /// - Parameters:
    ///   - path: A file path (its folder is made when missing), or `":memory:"`.
    ///   - options: Lock timeout, read-only, size limit.
    public init(path: String, options: Options = .init()) {
        self.path = path
        self.options = options
    }

    /// A private in-memory database.
    public static func inMemory(options: Options = .init()) -> SQLiteDatabase {
        SQLiteDatabase(path: ":memory:", options: options)
    }

    /// Whether this database lives in memory only.
    public var isInMemory: Bool { path == ":memory:" }

    /// Opens the database now rather than at the first call.
    ///
    /// - Throws: `RepositoryError.storage` naming the file and what to do.
    public func open() throws {
        _ = try writer()
    }

    // MARK: - Access

    /// The opened writer, opening it on first use (and again after a failed open).
    func writer() throws -> any DatabaseWriter {
        try opened.get { try self.makeWriter() }
    }

    /// Runs `body` in an immediate write transaction: all of it is kept, or none of it.
    ///
    /// - Throws: `RepositoryError.storage` naming the file, or what `body` throws.
    func write<T>(_ body: (Database) throws -> T) throws -> T {
        try mapErrors {
            try writer().writeWithoutTransaction { db in
                var result: T?
                try db.inTransaction(.immediate) {
                    result = try body(db)
                    return .commit
                }
                return result!
            }
        }
    }

    /// Runs `body` on a reader (beside a running write, in WAL mode).
    ///
    /// - Parameters:
    ///   - oneStatement: `body` runs a single statement, which SQLite keeps consistent by itself:
    ///     no transaction is opened around it (a fifth of a lookup by id).
    ///   - body: The reads.
    /// - Throws: `RepositoryError.storage` naming the file, or what `body` throws.
    func read<T>(oneStatement: Bool = false, _ body: (Database) throws -> T) throws -> T {
        try mapErrors { oneStatement ? try writer().unsafeRead(body) : try writer().read(body) }
    }

    /// Runs `body`, turning SQLite's errors into `RepositoryError.storage` that name this file.
    func mapErrors<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as DatabaseError {
            throw storageError(error)
        }
    }

    private func makeWriter() throws -> any DatabaseWriter {
        var configuration = Configuration()
        configuration.readonly = options.readOnly
        configuration.busyMode = .timeout(options.busyTimeout)
        configuration.label = "moonflow.sqlite"
        let maximumSize = options.maximumSize
        configuration.prepareDatabase { db in
            db.add(collation: SQLField.valueCollation)
            if let maximumSize, !db.configuration.readonly {
                let pageSize = try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 4096
                try db.execute(sql: "PRAGMA max_page_count = \(max(1, maximumSize / pageSize))")
            }
        }
        do {
            if isInMemory { return try DatabaseQueue(configuration: configuration) }
            let folder = PathText.parent(of: path)
            if !options.readOnly, !FileManager.default.fileExists(atPath: folder) {
                do {
                    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
                } catch {
                    throw RepositoryError.storage(
                        "\(path): cannot make its folder \(folder) (\(error.localizedDescription)); make the folder or choose another path"
                    )
                }
            }
            return try DatabasePool(path: path, configuration: configuration)
        } catch let error as DatabaseError {
            throw storageError(error)
        }
    }

    /// What went wrong with this file, and what to do about it.
    func storageError(_ error: DatabaseError) -> RepositoryError {
        let sqlite = "SQLite error \(error.resultCode.rawValue): \(error.message ?? "unknown")"
        let advice: String
        switch error.resultCode {
        case .SQLITE_BUSY, .SQLITE_LOCKED:
            advice =
                "the database is locked by another connection (\(sqlite)); close the program holding it, or try again"
        case .SQLITE_READONLY:
            advice =
                "the database is read-only (\(sqlite)); make the file and its folder writable, or store it elsewhere"
        case .SQLITE_FULL:
            advice =
                "the disk or the database's size limit is full (\(sqlite)); free some space or raise the limit, then write again"
        case .SQLITE_CORRUPT, .SQLITE_NOTADB:
            advice =
                "the file is not a SQLite database or is damaged (\(sqlite)); move it away to start empty, or restore it from a backup"
        case .SQLITE_CANTOPEN:
            advice = "the file cannot be opened (\(sqlite)); check that its folder exists and is writable"
        case .SQLITE_IOERR:
            advice = "reading or writing the disk failed (\(sqlite)); check the disk and its free space"
        case .SQLITE_TOOBIG:
            advice = "a record is too large for SQLite (\(sqlite)); store smaller records"
        case .SQLITE_PERM, .SQLITE_AUTH:
            advice = "access was denied (\(sqlite)); check the file's permissions"
        default:
            advice = sqlite
        }
        return .storage("\(path): \(advice)")
    }
}

/// The writer of a `SQLiteDatabase`, made on first use under a lock.
///
/// **Threading**: any thread; `get` serializes the first open.
private final class OpenedWriter: @unchecked Sendable {
    private let lock = NSLock()
    private var writer: (any DatabaseWriter)?

    func get(_ open: () throws -> any DatabaseWriter) throws -> any DatabaseWriter {
        lock.lock()
        defer { lock.unlock() }
        if let writer { return writer }
        let made = try open()
        writer = made
        return made
    }
}
