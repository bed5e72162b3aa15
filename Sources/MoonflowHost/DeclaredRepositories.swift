import Foundation
import LuaKit
import MoonflowLua
import MoonflowSQLite
import Runtime

/// Where the SQLite repositories that plugins declare keep their data.
///
///     var configuration = FeatureHost.Configuration()
///     configuration.repositoryStorage = .directory("/var/lib/app")   // moonflow run --db /var/lib/app
///
/// A declaration names a file (`sqlite = "users.db"`); this decides which file that is.
public enum RepositoryStorage: Sendable, Equatable {
    /// Where the plugin says: a relative path from the plugin's folder, an absolute path as it is.
    case asDeclared
    /// Every declared file in this folder, by its file name (`moonflow run --db DIR`).
    case directory(String)
    /// Every declared file an in-memory SQLite database of this host, empty at start
    /// (`moonflow run --db :memory:`).
    case sqliteInMemory
    /// Every declared repository, SQLite or not, a fresh seeded `InMemoryRepository` per feature:
    /// what specs use to start from the seed every time.
    case inMemoryRepositories

    /// `--db`'s argument: `:memory:` or a folder.
    public init(argument: String) {
        self = argument == ":memory:" ? .sqliteInMemory : .directory(argument)
    }
}

/// One entry of a feature's `repositories = { NAME = { sqlite = ..., indexes = {...}, seed = {...} } }`.
struct RepositoryDeclaration {
    let name: String
    /// The declared file, when the repository is a SQLite one.
    let sqlite: String?
    let indexes: [String]
    let seed: [LuaRecord]

    /// Every declaration of `definition`, sorted by name.
    ///
    /// - Throws: `HostError` naming the field and the fix.
    static func all(in definition: FeatureDefinition, lua: LuaState) throws -> [RepositoryDeclaration] {
        let declared: LuaValue = try lua.rawGet(definition.table, "repositories") { try $0.value(1, path: "repositories") }
        guard !declared.isNil else { return [] }
        let what = "\(definition.name): repositories"
        guard case .table(let table) = declared, table.array.isEmpty else {
            throw HostError("\(what) must be a table of name = { seed = { records... } } or name = { sqlite = \"NAME.db\", ... }")
        }
        return try table.hash.sorted(by: { "\($0.key)" < "\($1.key)" }).map { key, spec in
            guard let name = key.stringValue, case .table(let fields) = spec, fields.array.isEmpty else {
                throw HostError("\(what).\(key) must be a table like { seed = { {id = 1, name = \"Ada\"} } } or { sqlite = \"\(key).db\" }")
            }
            return try RepositoryDeclaration(name: name, spec: spec, fields: fields, what: "\(what).\(name)")
        }
    }

    private init(name: String, spec: LuaValue, fields: LuaTable, what: String) throws {
        self.name = name
        for (k, _) in fields.hash where !["seed", "sqlite", "indexes"].contains(k.stringValue ?? "") {
            throw HostError("\(what): unknown field \(k); a repository declaration takes seed, sqlite and indexes")
        }
        switch spec["sqlite"] {
        case nil: sqlite = nil
        case .string(let file)? where !file.description.isEmpty: sqlite = file.description
        default: throw HostError("\(what).sqlite must be a file name like \"\(name).db\" (relative to the plugin folder, or absolute)")
        }
        switch spec["indexes"] {
        case nil: indexes = []
        case .table(let list)? where list.hash.isEmpty:
            indexes = try list.array.enumerated().map { i, v in
                guard let field = v.stringValue, !field.isEmpty, !field.contains("\"") else {
                    throw HostError("\(what).indexes[\(i + 1)] must be a field name (a string without double quotes), like \"team\"")
                }
                return field
            }
        default: throw HostError("\(what).indexes must be a list of field names like { \"team\", \"name\" }")
        }
        if !indexes.isEmpty, sqlite == nil {
            throw HostError("\(what).indexes needs sqlite = \"\(name).db\": only SQLite repositories have indexes")
        }
        var seed: [LuaRecord] = []
        switch spec["seed"] {
        case nil: break
        case .table(let list)? where list.hash.isEmpty:
            for (i, v) in list.array.enumerated() {
                do { seed.append(try LuaRecord(lua: v)) } catch let e as RepositoryServiceError {
                    throw HostError("\(what).seed[\(i + 1)]: \(e.message)")
                }
            }
        default:
            throw HostError("\(what).seed must be a list of records like { {id = 1, name = \"Ada\"} }")
        }
        self.seed = seed
    }
}

/// The SQLite repositories a host made for declarations: one per file and table (and set of
/// indexes), shared by every feature that declares it, so a reloaded or second feature sees the
/// same rows.
///
/// **Threading:** used on the state executor of the host that made it only (checked in debug builds).
final class DeclaredRepositories: Sendable {
    private struct Made {
        var databases: [String: SQLiteDatabase] = [:]
        var repositories: [String: SQLiteRepository<LuaRecord>] = [:]
    }

    private let made: ExecutorBound<Made>

    init(on host: FeatureHost) {
        made = host.stateBound(Made())
    }

    /// The repository `declaration` gets under `storage`, for a plugin in `pluginFolder`.
    /// A sandboxed plugin's files stay in its data folder (`--db`, else its own folder):
    /// a declared name with a folder that leaves it is refused, naming `sandboxed` (its file).
    func repository(_ declaration: RepositoryDeclaration, storage: RepositoryStorage, pluginFolder: String,
                    sandboxed: String?) throws -> any Repository<LuaRecord> {
        guard let file = declaration.sqlite, storage != .inMemoryRepositories else {
            return InMemoryRepository<LuaRecord>(declaration.seed)
        }
        if let source = sandboxed, let reason = Self.leavesDataFolder(file) {
            throw HostError("\(source): repositories.\(declaration.name).sqlite = \"\(file)\": \(reason); a sandboxed plugin's database files stay in its data folder (moonflow run --db DIR chooses it): name a file like \"\(declaration.name).db\"")
        }
        let path: String
        switch storage {
        case .asDeclared, .inMemoryRepositories:
            path = file == ":memory:" || file.hasPrefix("/") ? file : (pluginFolder as NSString).appendingPathComponent(file)
        case .directory(let folder):
            path = (folder as NSString).appendingPathComponent((file as NSString).lastPathComponent)
        case .sqliteInMemory:
            path = ":memory:"
        }
        // In-memory databases are told apart by the declared file, so two names for one file share it.
        let databaseKey = path == ":memory:" ? "memory:" + file : path
        let key = "\(databaseKey)|\(declaration.name)|\(declaration.indexes.joined(separator: ","))"
        if let existing = made.value.repositories[key] { return existing }
        let database = made.value.databases[databaseKey] ?? SQLiteDatabase(path: path)
        made.value.databases[databaseKey] = database
        let repository: SQLiteRepository<LuaRecord>
        do {
            repository = try SQLiteRepository(database: database, table: declaration.name, indexes: declaration.indexes,
                                        seed: declaration.seed, coding: LuaRecord.sqliteCoding)
        } catch let error as SQLiteSchemaError {
            throw HostError("repositories.\(declaration.name): \(error.message)")
        }
        made.value.repositories[key] = repository
        return repository
    }

    /// Why a declared file name would reach outside the plugin's data folder, or nil if it stays in.
    static func leavesDataFolder(_ file: String) -> String? {
        if file == ":memory:" { return nil }
        if file.utf8.contains(0) { return "a file name cannot hold a NUL byte" }
        if file.hasPrefix("/") || file.hasPrefix("~") { return "an absolute path is refused" }
        if file.lowercased().hasPrefix("file:") { return "a URI is refused" }
        if file.split(separator: "/", omittingEmptySubsequences: false).contains("..") { return "\"..\" is refused" }
        return nil
    }
}

extension LuaRecord {
    /// A Lua record as a SQLite row: its id (an integer or a string, kept as it is) and fields.
    static let sqliteCoding = SQLiteRowCoding<LuaRecord>(
        id: { $0 },
        encode: { ($0.id, $0.fields) },
        decode: { LuaRecord(id: $0, fields: $1) })
}
