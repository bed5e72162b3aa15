import Foundation
import LuaKit
import MoonflowHost
import MoonflowLua

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
    private let texts: MemoryTexts

    public init(_ files: [String: String] = [:], name: String = "memory") {
        texts = MemoryTexts(files, name: name)
    }

    /// The host's own memory (`host.memory`).
    init(texts: MemoryTexts) { self.texts = texts }

    public var name: String { texts.name }

    /// Sets the text of `path` (nil removes the file).
    public func set(_ path: String, _ text: String?) { texts.set(path, text) }

    public func text(at path: String) throws -> String? { try texts.text(at: path) }

    public func pluginNames() -> [String] { texts.pluginNames() }
}

/// A `PluginSource` as the host reads one.
private final class SourceTexts: PluginTexts {
    let source: any PluginSource
    init(_ source: any PluginSource) { self.source = source }
    var name: String { source.name }
    func text(at path: String) throws -> String? { try source.text(at: path) }
    func pluginNames() -> [String] { source.pluginNames() }
}

extension FeatureHost.Configuration {
    /// Plugins that are not in a folder (text in memory, an app's store), looked in after
    /// the search paths, in order. The host's own `memory` source comes first.
    public var sources: [any PluginSource] {
        get { pluginTexts.compactMap { ($0 as? SourceTexts)?.source } }
        set { pluginTexts = newValue.map(SourceTexts.init) }
    }
}

extension FeatureHost {
    /// Plugins held as text by the host itself: `load(name:source:)` puts them here, and
    /// `memory.set` changes them for `reload`.
    public var memory: InMemoryPluginSource { InMemoryPluginSource(texts: memoryTexts) }

    /// Loads a plugin given as text, kept in the host's `memory` source under `name`: for
    /// tests and previews. `require "NAME.mod"` finds what `memory.set("NAME/mod.lua", ...)`
    /// put there; `memory.set("NAME/init.lua", ...)` then `reload` changes the code.
    ///
    ///     let greeter = try host.load(name: "greeter", source: "return require('moonflow').feature{...}")
    public func load(name: String, source text: String, initial: LuaValue? = nil) throws -> RunningFeature {
        try load(text: text, named: name, initial: initial)
    }
}

extension MainActorHost {
    /// Loads a plugin given as text (kept in `host.memory` under `name`, for `reload`).
    public func load(name: String, source: String, initial: LuaValue? = nil) throws -> MainActorFeature {
        MainActorFeature(try host.load(name: name, source: source, initial: initial))
    }
}
