import Foundation
import LuaRepositories
import MoonflowHost
import Runtime

/// Where the SQLite repositories that plugins declare keep their data.
///
///     var configuration = FeatureHost.Configuration()
///     configuration.repositoryFiles = SQLiteRepositoryFiles(storage: .directory("/var/lib/app"))
///
/// A declaration names a file (`sqlite = "users.db"`); this decides which file that is.
public enum RepositoryStorage: Sendable, Equatable {
    /// Where the plugin says: a relative path from the plugin's folder, an absolute path as it is.
    case asDeclared
    /// Every declared file in this folder, by its file name (`moonflow run --db DIR`).
    case directory(String)
    /// Every declared file an in-memory SQLite database, empty at start (`moonflow run --db :memory:`).
    case inMemory

    /// `--db`'s argument: `:memory:` or a folder.
    public init(argument: String) {
        self = argument == ":memory:" ? .inMemory : .directory(argument)
    }
}

/// Keeps plugins' declared repositories (`repositories = { users = { sqlite = "users.db" } }`)
/// in SQLite tables: one per file and table (and set of indexes), made on first use, seeded
/// when the table is made, and shared by every feature of the hosts that use this value, so a
/// reloaded or second feature sees the same rows.
///
/// **Threading:** any thread.
public final class SQLiteRepositoryFiles: RepositoryFiles, RepositoryFileLocating, @unchecked Sendable {
    public let storage: RepositoryStorage
    private let lock = NSLock()
    private var databases: [String: SQLiteDatabase] = [:]
    private var repositories: [String: SQLiteRepository<LuaRecord>] = [:]

    public init(storage: RepositoryStorage = .asDeclared) {
        self.storage = storage
    }

    /// Where the declared `file` is opened, and the folder it belongs in (nil: none, in memory).
    private func place(of file: String, pluginFolder: String) -> (path: String, folder: String?) {
        switch storage {
        case .asDeclared:
            if file == ":memory:" { return (file, nil) }
            return file.hasPrefix("/") ? (file, nil) : (PathText.join(pluginFolder, file), pluginFolder)
        case .directory(let folder):
            return (PathText.join(folder, PathText.name(of: file)), folder)
        case .inMemory:
            return (":memory:", nil)
        }
    }

    package func location(
        for declaration: RepositoryDeclaration, pluginFolder: String
    ) -> (paths: [String], folder: String)? {
        guard let file = declaration.file else { return nil }
        let (path, folder) = place(of: file, pluginFolder: pluginFolder)
        guard let folder else { return nil }
        return ([path] + ["-wal", "-shm", "-journal"].map { path + $0 }, folder)
    }

    public func repository(
        for declaration: RepositoryDeclaration, pluginFolder: String
    ) throws -> any Repository<LuaRecord> {
        guard let file = declaration.file else { return InMemoryRepository<LuaRecord>(declaration.seed) }
        let path = place(of: file, pluginFolder: pluginFolder).path
        // In-memory databases are told apart by the declared file, so two names for one file share it.
        let databaseKey = path == ":memory:" ? "memory:" + file : path
        let key = "\(databaseKey)|\(declaration.name)|\(declaration.indexes.joined(separator: ","))"
        return try lock.withLock {
            if let existing = repositories[key] { return existing }
            let database = databases[databaseKey] ?? SQLiteDatabase(path: path)
            databases[databaseKey] = database
            let repository = try SQLiteRepository(
                database: database, table: declaration.name, indexes: declaration.indexes,
                seed: declaration.seed, coding: LuaRecord.sqliteCoding)
            repositories[key] = repository
            return repository
        }
    }
}

extension LuaRecord {
    /// A Lua record as a SQLite row: its id (an integer or a string, kept as it is) and fields.
    static let sqliteCoding = SQLiteRowCoding<LuaRecord>(
        id: { $0 },
        encode: { ($0.id, $0.fields) },
        decode: { LuaRecord(id: $0, fields: $1) })
}
