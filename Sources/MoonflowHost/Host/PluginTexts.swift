import Foundation
import Streams

/// A place the host reads plugins' Lua text from besides its search paths: a source an app
/// configured (`MoonflowHostTools`' public `PluginSource`, adapted), the host's own memory,
/// a connected dev server. Asked on the host's state executor only.
package protocol PluginTexts: AnyObject, Sendable {
    /// Shown in front of a file's path in messages (`memory:cart/init.lua:3`).
    var name: String { get }
    /// The text of the file at `path` (`cart/init.lua`), or nil when there is none.
    func text(at path: String) throws -> String?
    /// The plugins held now (folders with an `init.lua`).
    func pluginNames() -> [String]
}

/// Plugin files as text in memory: the host's own (`load(name:source:)` puts a plugin there)
/// and what `InMemoryPluginSource` holds. `set` may be called from any thread.
package final class MemoryTexts: PluginTexts {
    package let name: String
    private let files: Locked<[String: String]>

    package init(_ files: [String: String] = [:], name: String = "memory") {
        self.name = name
        self.files = Locked(files)
    }

    /// Sets the text of `path` (nil removes the file).
    package func set(_ path: String, _ text: String?) {
        files.withLock { $0[path] = text }
    }

    package func text(at path: String) throws -> String? { files.withLock { $0[path] } }

    package func pluginNames() -> [String] {
        files.withLock { files in
            files.keys.compactMap { path in
                let parts = path.split(separator: "/")
                return parts.count == 2 && parts[1] == "init.lua" ? String(parts[0]) : nil
            }.sorted()
        }
    }
}
