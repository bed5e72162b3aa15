/// What a reload did (`FeatureHost.reload` and `restart`, in MoonflowHostTools).
public struct ReloadReport: Sendable, Equatable {
    /// A feature whose state went through `migrate`.
    public struct Migration: Sendable, Equatable {
        public let feature: String
        public let fromVersion: Int64
        public let toVersion: Int64

        public init(feature: String, fromVersion: Int64, toVersion: Int64) {
            self.feature = feature
            self.fromVersion = fromVersion
            self.toVersion = toVersion
        }
    }

    /// The changed files, relative to the plugin folder (`init.lua`, `mod.lua`).
    public let files: [String]
    public let migrations: [Migration]
    /// From the change being noticed (or `reload` being called) to the new code running.
    public let ms: Double
    /// State keys filled in or left over, work kept or cancelled.
    public let changes: ReloadChanges

    package init(files: [String], migrations: [Migration], ms: Double, changes: ReloadChanges) {
        self.files = files
        self.migrations = migrations
        self.ms = ms
        self.changes = changes
    }
}
