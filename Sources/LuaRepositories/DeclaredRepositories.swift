import Foundation
import LuaKit
import MoonflowLua
import Runtime

/// Keeps the repositories that plugins declare with a file (`sqlite = "users.db"`).
/// A host has none unless the app gives it one, and then every declared repository is a
/// fresh in-memory one, seeded (what specs and `FeatureStore` want). MoonflowSQLite's
/// `SQLiteRepositoryFiles` keeps them in SQLite files:
///
///     ///     var configuration = FeatureHost.Configuration(searchPaths: ["plugins"])
///     configuration.repositoryFiles = SQLiteRepositoryFiles(storage: .directory("/var/lib/app"))
///
/// A sandboxed plugin's declared file names are checked by the host before they get here:
/// no absolute path, no `..`, no URI.
public protocol RepositoryFiles: Sendable {
    /// The repository for `declaration` (its `file` is set), of a plugin in `pluginFolder`.
    /// Every feature of the host that declares the same file, table and indexes should get the
    /// same repository, so a reloaded or second feature sees the same rows.
    ///
    /// Called on the host's state executor.
    /// - Throws: an error whose description names the declaration and the fix.
    func repository(for declaration: RepositoryDeclaration, pluginFolder: String) throws -> any Repository<LuaRecord>
}

/// Where a `RepositoryFiles` opens a declared file, so that the host can keep a sandboxed
/// plugin's files in their folder when a link there leads elsewhere.
package protocol RepositoryFileLocating {
    /// The paths opened for `declaration` (the file, and the journal and WAL files SQLite makes
    /// beside it) and the folder they belong in; nil when nothing is on disk (in memory).
    func location(for declaration: RepositoryDeclaration, pluginFolder: String) -> (paths: [String], folder: String)?
}

/// One entry of a feature's `repositories = { NAME = { sqlite = ..., indexes = {...}, seed = {...} } }`.
public struct RepositoryDeclaration: Sendable {
    /// The service's name, and the table's in a file.
    public let name: String
    /// The declared file, when the repository is kept in one.
    public let file: String?
    /// Fields to index, in order.
    public let indexes: [String]
    /// The records a new repository starts with.
    public let seed: [LuaRecord]

    /// Every declaration of `definition`, sorted by name.
    ///
    /// - Throws: `HostError` naming the field and the fix.
    static func all(in definition: FeatureDefinition, lua: LuaState) throws -> [RepositoryDeclaration] {
        let declared: LuaValue = try lua.rawGet(definition.table, "repositories") {
            try $0.value(1, path: "repositories")
        }
        guard !declared.isNil else { return [] }
        let what = "\(definition.name): repositories"
        guard case .table(let table) = declared, table.array.isEmpty else {
            throw HostError(
                "\(what) must be a table of name = { seed = { records... } } or name = { sqlite = \"NAME.db\", ... }")
        }
        return try table.hash.sorted(by: { "\($0.key)" < "\($1.key)" }).map { key, spec in
            guard let name = key.stringValue, case .table(let fields) = spec, fields.array.isEmpty else {
                throw HostError(
                    "\(what).\(key) must be a table like { seed = { {id = 1, name = \"Ada\"} } } or { sqlite = \"\(key).db\" }"
                )
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
        case nil: file = nil
        case .string(let declared)? where !declared.description.isEmpty: file = declared.description
        default:
            throw HostError(
                "\(what).sqlite must be a file name like \"\(name).db\" (relative to the plugin folder, or absolute)")
        }
        switch spec["indexes"] {
        case nil: indexes = []
        case .table(let list)? where list.hash.isEmpty:
            indexes = try list.array.enumerated().map { i, v in
                guard let field = v.stringValue, !field.isEmpty, !field.contains("\"") else {
                    throw HostError(
                        "\(what).indexes[\(i + 1)] must be a field name (a string without double quotes), like \"team\""
                    )
                }
                return field
            }
        default: throw HostError("\(what).indexes must be a list of field names like { \"team\", \"name\" }")
        }
        if !indexes.isEmpty, file == nil {
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

extension RepositoryDeclaration {
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
