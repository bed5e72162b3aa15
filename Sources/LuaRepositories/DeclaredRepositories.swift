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

    /// A declaration as the host read it from a plugin.
    package init(name: String, file: String?, indexes: [String], seed: [LuaRecord]) {
        self.name = name
        self.file = file
        self.indexes = indexes
        self.seed = seed
    }
}

extension RepositoryDeclaration {
    /// Why a declared file name would reach outside the plugin's data folder, or nil if it stays in.
    package static func leavesDataFolder(_ file: String) -> String? {
        if file == ":memory:" { return nil }
        if file.utf8.contains(0) { return "a file name cannot hold a NUL byte" }
        if file.hasPrefix("/") || file.hasPrefix("~") { return "an absolute path is refused" }
        if file.lowercased().hasPrefix("file:") { return "a URI is refused" }
        if file.split(separator: "/", omittingEmptySubsequences: false).contains("..") { return "\"..\" is refused" }
        return nil
    }
}
