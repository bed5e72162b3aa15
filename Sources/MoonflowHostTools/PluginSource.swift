import Foundation
import Streams

/// Where a host finds plugins' Lua text besides the folders of its search paths: text in
/// memory, an app's own store, a download. A plugin `NAME` is the file `NAME/init.lua` of a
/// source, and `require "NAME.mod"` finds `NAME/mod.lua` in the same source. Messages name
/// such a file `SOURCE:NAME/init.lua` (`memory:cart/init.lua:3: ...`). A source's files may
/// change: `reload` reads them again. (An app bundle's plugins are a folder: give its path
/// as a search path.)
///
///     let drafts = InMemoryPluginSource(["cart/init.lua": source])
///     let host = try FeatureHost(configuration: .init(sources: [drafts]))
///     let cart = try host.load("cart")
///     drafts.set("cart/init.lua", edited)
///     try host.reload(cart)
public protocol PluginSource: AnyObject, Sendable {
    /// Shown in front of a file's path in messages; letters, digits and `-` only.
    var name: String { get }
    /// The text of the file at `path` (`cart/init.lua`), or nil when the source has none.
    /// Called on the host's state executor.
    func text(at path: String) throws -> String?
    /// The plugins the source holds now (folders with an `init.lua`).
    func pluginNames() -> [String]
}

/// Plugins as text in memory, for tests, previews and code an app received: `set` adds,
/// changes or removes a file at any time, from any thread.
///
///     let source = InMemoryPluginSource(["greeter/init.lua": "return require('moonflow').feature{...}"])
public final class InMemoryPluginSource: PluginSource {
    public let name: String
    private let files: Locked<[String: String]>

    public init(_ files: [String: String] = [:], name: String = "memory") {
        self.name = name
        self.files = Locked(files)
    }

    /// Sets the text of `path` (nil removes the file).
    public func set(_ path: String, _ text: String?) {
        files.withLock { $0[path] = text }
    }

    public func text(at path: String) throws -> String? { files.withLock { $0[path] } }

    public func pluginNames() -> [String] {
        files.withLock { files in
            files.keys.compactMap { path in
                let parts = path.split(separator: "/")
                return parts.count == 2 && parts[1] == "init.lua" ? String(parts[0]) : nil
            }.sorted()
        }
    }
}
