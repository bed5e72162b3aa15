import Foundation
import LuaKit
import MoonflowLua

/// Finding plugins and loading them: a name or path resolved to a file, its definition read,
/// `require` pointed at its folder, and the loads that make a feature from it.
extension FeatureHost {
    /// Where a plugin named or pathed `spec` lives: a folder with `init.lua`, a
    /// `.lua` file, or a plugin name found in the search paths.
    public func resolve(_ spec: String) throws -> String {
        let fm = FileManager.default
        var isDir: ObjCBool = false
        if fm.fileExists(atPath: spec, isDirectory: &isDir) {
            if !isDir.boolValue { return spec }
            let initFile = (spec as NSString).appendingPathComponent("init.lua")
            guard fm.fileExists(atPath: initFile) else {
                throw HostError("\(spec) is a folder without init.lua; a plugin folder needs an init.lua that returns mf.feature{...}")
            }
            return initFile
        }
        if !spec.contains("/") && !spec.hasSuffix(".lua") {
            for dir in configuration.searchPaths {
                let initFile = ((dir as NSString).appendingPathComponent(spec) as NSString).appendingPathComponent("init.lua")
                if fm.fileExists(atPath: initFile) { return initFile }
            }
            throw HostError("no plugin named '\(spec)' in \(configuration.searchPaths.joined(separator: ", ")); expected \(configuration.searchPaths.first ?? "plugins")/\(spec)/init.lua")
        }
        throw HostError("\(spec) does not exist; give a plugin folder (with init.lua) or a .lua file")
    }

    /// Makes `require "NAME.mod"` find `DIR/NAME/mod.lua` for each search path.
    func setSearchPaths(_ dirs: [String]) throws {
        for dir in dirs.reversed() { try perform { try addPackageRoot(dir) } }
    }

    /// Loads and validates the definition a plugin returns, without running it.
    ///
    /// - Returns: the definition and the file it came from.
    /// - Throws: `LuaError` (syntax, runtime), `DefinitionError` or `HostError`.
    package func loadDefinition(_ spec: String) throws -> (FeatureDefinition, String) {
        let file = try resolve(spec)
        return try perform {
            try addPackagePath(for: file)
            let chunk = try lua.load(file: file, env: try sandbox.map { try $0.env(forPluginFile: file) })
            let definition: FeatureDefinition = try lua.call(chunk, []) { slots in
                guard slots.count >= 1, slots.isTable(1) else {
                    throw HostError("\(file) must return a definition (return mf.feature{...}); it returned \(slots.count == 0 ? "nothing" : slots.typeName(1))")
                }
                do { return try FeatureDefinition.read(slots, 1, kind: nil) } catch let e as DefinitionError {
                    throw HostError("\(file): \(e.message)")
                }
            }
            return (definition, file)
        }
    }

    private func addPackagePath(for file: String) throws {
        // plugins/NAME/init.lua -> plugins/?.lua so that require "NAME.mod" finds plugins/NAME/mod.lua
        let pluginDir = (file as NSString).deletingLastPathComponent
        let parent = (pluginDir as NSString).deletingLastPathComponent
        try addPackageRoot(parent.isEmpty ? "." : parent)
    }

    private func addPackageRoot(_ root: String) throws {
        let fn = try lua.load(string: """
            local root = ...
            local entry = root .. "/?.lua;" .. root .. "/?/init.lua;"
            if not package.path:find(entry, 1, true) then package.path = entry .. package.path end
            """, name: "moonflow.paths")
        try lua.call(fn, [.value(.string(LuaString(root)))]) { _ in () }
    }

    /// Loads a plugin and starts its feature (the initial state event is sent
    /// when you call `start()` on it, after attaching observers).
    ///
    /// - Parameter initial: a state to start from instead of the definition's
    ///   `initial` (for an `mf.compose`, a table of the children's states by name).
    /// - Throws: `FeatureError` of stage `.load`: a missing plugin, a syntax or runtime error
    ///   with its `file:line`, a definition that is not one (the cause in `underlying`).
    public func load(_ spec: String, initial: LuaValue? = nil) throws -> RunningFeature {
        try loadNow(spec, initial: initial)
    }

    private func loadNow(_ spec: String, initial: LuaValue?) throws -> RunningFeature {
        do {
            let (definition, file) = try loadDefinition(spec)
            return try perform { try makeFeature(definition, source: file, initial: initial) }
        } catch {
            throw FeatureError(stage: .load, wrapping: error)
        }
    }

    /// Loads a plugin without blocking the caller (the main actor, say): the
    /// work runs on the state executor and the caller resumes when it is done.
    public func load(_ spec: String, initial: LuaValue? = nil) async throws -> RunningFeature {
        // On the virtual clock, and on a main-actor host called from the main thread, it is that thread's work.
        guard let queue, queue !== DispatchQueue.main || !Thread.isMainThread else { return try loadNow(spec, initial: initial) }
        // Handed over through a lock: the feature was made on the queue, and the lock gives
        // the caller's thread (and ThreadSanitizer) the ordering the continuation implies.
        let handover = Handover()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async {
                handover.put(Result { try self.loadNow(spec, initial: initial) })
                continuation.resume()
            }
        }
        return try handover.take()
    }

    /// Makes a feature from a definition table already in Lua (`mf.feature{...}`
    /// written in a spec); `source` names it in messages.
    package func load(table: LuaRef, source: String, initial: LuaValue? = nil) throws -> RunningFeature {
        try perform {
            let definition = try lua.call(bridge.dispatch.identity, [.ref(table)]) { slots in
                do { return try FeatureDefinition.read(slots, 1, kind: nil) } catch let e as DefinitionError {
                    throw HostError("\(source): \(e.message)")
                }
            }
            return try makeFeature(definition, source: source, initial: initial)
        }
    }
}

/// A loaded feature passed from the state queue to an async caller under a lock.
private final class Handover: @unchecked Sendable {
    private let lock = NSLock()
    private var result: Result<RunningFeature, any Error>?
    func put(_ r: Result<RunningFeature, any Error>) { lock.withLock { result = r } }
    func take() throws -> RunningFeature { try lock.withLock { result! }.get() }
}
