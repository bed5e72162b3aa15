import Foundation
import LuaKit
import MoonflowLua
import Streams

/// Finding plugins and loading them: a name or path resolved to a file, its definition read,
/// `require` pointed at its folder, and the loads that make a feature from it.
extension FeatureHost {
    /// Where a plugin named or pathed `spec` lives: a folder with `init.lua`, a
    /// `.lua` file, or a plugin name found in the search paths.
    package func resolve(_ spec: String) throws -> String {
        // On the state executor: plugin sources are asked only there.
        try perform { try resolveOnExecutor(spec) }
    }

    private func resolveOnExecutor(_ spec: String) throws -> String {
        let fm = FileManager.default
        // A plugin a dev server holds is its copy, whatever the working folder holds of that
        // name (an app started from its project folder): that copy is the one saves reload.
        if !spec.contains("/") && !spec.hasSuffix(".lua") {
            for source in devServers where (try source.text(at: "\(spec)/init.lua")) != nil {
                return "\(source.name):\(spec)/init.lua"
            }
        }
        var isDir: ObjCBool = false
        if fm.fileExists(atPath: spec, isDirectory: &isDir) {
            if !isDir.boolValue { return spec }
            // `.`, `./` and `plugins/x/` name their init.lua as `init.lua` and `plugins/x/init.lua`.
            let initFile = PathText.join(spec, "init.lua")
            guard fm.fileExists(atPath: initFile) else {
                throw HostError(
                    "\(spec) is a folder without init.lua; a plugin folder needs an init.lua that returns mf.feature{...}"
                )
            }
            return initFile
        }
        if let (source, path) = sourceFile(spec), (try source.text(at: path)) != nil { return "\(source.name):\(path)" }
        if !spec.contains("/") && !spec.hasSuffix(".lua") {
            for dir in configuration.searchPaths {
                let initFile = ((dir as NSString).appendingPathComponent(spec) as NSString).appendingPathComponent(
                    "init.lua")
                if fm.fileExists(atPath: initFile) { return initFile }
            }
            for source in sources where (try source.text(at: "\(spec)/init.lua")) != nil {
                return "\(source.name):\(spec)/init.lua"
            }
            // The sources that hold plugins at all (the host's memory is usually empty).
            let places = configuration.searchPaths + sources.filter { !$0.pluginNames().isEmpty }.map { "\($0.name):" }
            throw HostError(
                "no plugin named '\(spec)' in \(places.joined(separator: ", ")); expected \(configuration.searchPaths.first ?? "plugins")/\(spec)/init.lua"
            )
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
        let (chunk, file) = try compilePlugin(spec)
        return (try definition(calling: chunk, file: file), file)
    }

    /// A plugin's `init.lua` compiled, not run: each call of the chunk returns a new definition,
    /// whose functions (`handle`, `reduce`, its Lua services) share nothing with an earlier
    /// call's (`definition(calling:file:)`). The explorer compiles once and calls it per run.
    ///
    /// - Returns: the chunk and the file it came from.
    /// - Throws: `LuaError` (syntax) or `HostError` (no such plugin).
    package func compilePlugin(_ spec: String) throws -> (chunk: LuaRef, file: String) {
        let file = try resolve(spec)
        return try perform {
            let env = try sandbox.map { try $0.env(forPluginFile: file) }
            if let (source, path) = sourceFile(file) {
                guard let text = try source.text(at: path) else { throw HostError("\(file) is gone from its source") }
                return (try lua.load(string: text, name: file, env: env), file)
            }
            try addPackagePath(for: file)
            return (try lua.load(file: file, env: env), file)
        }
    }

    /// Runs a compiled plugin (`compilePlugin`) and reads the definition it returns.
    package func definition(calling chunk: LuaRef, file: String) throws -> FeatureDefinition {
        try perform {
            try lua.call(chunk, []) { slots in
                guard slots.count >= 1, slots.isTable(1) else {
                    throw HostError(
                        "\(file) must return a definition (return mf.feature{...}); it returned \(slots.count == 0 ? "nothing" : slots.typeName(1))"
                    )
                }
                do { return try FeatureDefinition.read(slots, 1, kind: nil) } catch let e as DefinitionError {
                    throw HostError("\(file): \(e.message)")
                }
            }
        }
    }

    /// The globals table the files of the plugin `file` belongs to run with: the plugin's own
    /// under `isolatesPlugins` (made now if it was not loaded yet), else the state's. The tool
    /// reads what a plugin may reach from it (`moonflow check`'s list for luacheck).
    package func pluginGlobals(forFile file: String) throws -> LuaRef {
        try perform {
            if let sandbox { return try sandbox.env(forPluginFile: file) }
            return try lua.ref(global: "_G")
        }
    }

    /// Loads a plugin given as text, kept in the host's memory under `name`
    /// (`MoonflowHostTools`' `load(name:source:)`).
    package func load(text: String, named name: String, initial: LuaValue? = nil) throws -> RunningFeature {
        memoryTexts.set("\(name)/init.lua", text)
        return try load("\(memoryTexts.name):\(name)/init.lua", initial: initial)
    }

    /// The source and relative path of a file named `SOURCE:PATH` (`memory:cart/init.lua`;
    /// `memory:/cart/util.lua` too, as a sandboxed plugin's `require` builds it); nil for a
    /// file on disk.
    func sourceFile(_ file: String) -> (any PluginTexts, String)? {
        guard let colon = file.firstIndex(of: ":") else { return nil }
        let name = file[..<colon]
        guard let source = sources.first(where: { $0.name == name }) else { return nil }
        var path = file[file.index(after: colon)...]
        while path.hasPrefix("/") { path = path.dropFirst() }
        return (source, String(path))
    }

    /// Whether `file` (on disk, or `SOURCE:PATH`) is there now.
    func pluginFileExists(_ file: String) -> Bool {
        if let (source, path) = sourceFile(file) { return ((try? source.text(at: path)) ?? nil) != nil }
        return FileManager.default.fileExists(atPath: file)
    }

    /// `require "NAME.mod"` of a plugin held by a source: a searcher after the one of files on
    /// `package.path` (the search paths come first) asks the sources for `NAME/mod.lua` (text
    /// only). A name is dotted words (letters, digits, `_`): no absolute path, `..` or NUL
    /// reaches a source.
    func installSourceSearcher() throws {
        let find: LuaFunction = { [weak self] args in
            guard let self, let name = try args.value(1, path: "module name").stringValue else { return [.value(.nil)] }
            guard FeatureHost.isModuleName(name) else {
                return [
                    .value(.nil),
                    .value(
                        .string(
                            LuaString(
                                "no module '\(name)' in the plugin sources: a module name is words of letters, digits and _ joined by dots"
                            ))),
                ]
            }
            let path = name.replacingOccurrences(of: ".", with: "/") + ".lua"
            for source in self.sources {
                if let text = try source.text(at: path) {
                    return [.value(.string(LuaString(text))), .value(.string(LuaString("\(source.name):\(path)")))]
                }
            }
            return [
                .value(.nil),
                .value(
                    .string(
                        LuaString(
                            "no file '\(path)' in the sources " + self.sources.map(\.name).joined(separator: ", ")))),
            ]
        }
        try lua.addModuleSearcher(find)
        // The dev servers' modules come first, before package.path's (which holds `./?.lua`):
        // `require "counter.util"` of the served counter is the server's copy, not a
        // `counter/util.lua` of the app's working folder, which no save would reload.
        let findServed: LuaFunction = { [weak self] args in
            guard let self, let name = try args.value(1, path: "module name").stringValue,
                FeatureHost.isModuleName(name)
            else { return [.value(.nil)] }
            let path = name.replacingOccurrences(of: ".", with: "/") + ".lua"
            for source in self.devServers {
                if let text = try source.text(at: path) {
                    return [.value(.string(LuaString(text))), .value(.string(LuaString("\(source.name):\(path)")))]
                }
            }
            return [.value(.nil)]
        }
        let served = try lua.load(string: FeatureHost.servedSearcherSource, name: "moonflow.served")
        try lua.call(served, [.function(findServed)]) { _ in () }
    }

    /// Puts the dev servers' searcher right after the preload one (text only, as the others).
    private static let servedSearcherSource = """
        local find = ...
        local load, error = load, error
        table.insert(package.searchers, 2, function(name)
          local text, where = find(name)
          if not text then return nil end
          local chunk, err = load(text, "@" .. where, "t")
          if not chunk then error(("error loading module '%s' from '%s':\\n\\t%s"):format(name, where, err), 0) end
          return chunk, where
        end)
        """

    /// Whether `byte` is an ASCII letter, digit or `_`.
    private static func isWordByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"):
            true
        default: false
        }
    }

    /// Whether `name` is words of letters, digits and `_` joined by single dots.
    static func isModuleName(_ name: String) -> Bool {
        let words = name.split(separator: ".", omittingEmptySubsequences: false)
        return !words.isEmpty
            && words.allSatisfy { word in
                !word.isEmpty && word.utf8.allSatisfy(isWordByte)
            }
    }

    private func addPackagePath(for file: String) throws {
        // plugins/NAME/init.lua -> plugins/?.lua so that require "NAME.mod" finds plugins/NAME/mod.lua
        let dir = PathText.parent(of: file)
        // A lone file in the current folder (`x.lua`) keeps `.`; `./init.lua`'s plugin folder is `.`, whose parent is `..`.
        try addPackageRoot(dir == "." && PathText.name(of: file) != "init.lua" ? "." : PathText.parent(of: dir))
    }

    /// Puts a folder's `?.lua` and `?/init.lua` first on `package.path`, once (`Lua/package_root.lua`).
    private static let packageRootSource = String(decoding: PackageResources.package_root_lua, as: UTF8.self)

    private func addPackageRoot(_ root: String) throws {
        let fn = try lua.load(string: FeatureHost.packageRootSource, name: "moonflow.paths")
        try lua.call(fn, [.value(.string(LuaString(root)))]) { _ in () }
    }

    /// Loads a plugin and starts its feature (the initial state event is sent
    /// when you call `start()` on it, after attaching observers).
    ///
    /// - Parameter initial: a state to start from instead of the definition's
    ///   `initial` (for an `mf.compose`, a table of the children's states by name).
    /// On a `.mainActor` host call it on the main actor (else `try await load(...)`): from
    /// another thread it would wait for the main thread, which may be waiting for that thread.
    /// On a `.queue` host it waits for the host's queue.
    ///
    /// - Throws: `FeatureError` of stage `.load`: a missing plugin, a syntax or runtime error
    ///   with its `file:line`, a definition that is not one (the cause in `underlying`); on a
    ///   `.mainActor` host called off the main actor, one that says to await it.
    public func load(_ spec: String, initial: LuaValue? = nil) throws -> RunningFeature {
        if runsOnMainActor, !MainScheduler.isCurrent {
            throw FeatureError(
                stage: .load,
                message:
                    "load(\"\(spec)\") was called off the main actor on a .mainActor host: it would wait for the main thread, which may be waiting for this one; call `try await host.load(\"\(spec)\")` instead, or load on the main actor"
            )
        }
        return try loadNow(spec, initial: initial)
    }

    private func loadNow(_ spec: String, initial: LuaValue?) throws -> RunningFeature {
        do {
            let (definition, file) = try loadDefinition(spec)
            return try perform {
                let feature = try makeFeature(definition, source: file, initial: initial)
                if let (source, path) = sourceFile(file), let server = source as? DevServerConnection {
                    server.attach(feature, plugin: String(path.prefix { $0 != "/" }))
                }
                return feature
            }
        } catch {
            throw bridge.relative(FeatureError(stage: .load, wrapping: error))
        }
    }

    /// Loads a plugin without blocking the caller (the main actor, say): the
    /// work runs on the state executor and the caller resumes when it is done.
    /// - Throws: as `load(_:initial:)`, or `CancellationError` as soon as the awaiting task is
    ///   cancelled while the load waits its turn on the executor (then it never loads).
    public func load(_ spec: String, initial: LuaValue? = nil) async throws -> RunningFeature {
        // On the virtual clock, and on a main-actor host called from the main thread, it is that thread's work.
        guard let queue, !runsOnMainActor || !MainScheduler.isCurrent else {
            return try loadNow(spec, initial: initial)
        }
        try Task.checkCancellation()
        // Resumed through a lock: the feature was made on the queue, and the lock gives
        // the caller's thread (and ThreadSanitizer) the ordering the continuation implies.
        let wait = CancellableWait<RunningFeature>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                guard wait.begin(continuation) else { return }
                queue.async {
                    guard wait.start() else { return }
                    let loaded = Result { try self.loadNow(spec, initial: initial) }
                    wait.take()?.resume(with: loaded)
                }
            }
        } onCancel: {
            wait.cancel()
        }
    }

    /// Makes a feature from a fresh run of a compiled plugin (`compilePlugin`): a new definition
    /// each time, as a load by name makes, without reading and compiling the file again.
    /// `overrides`, given the new definition's table, returns the services that replace the
    /// plugin's own (`serviceOverrides`), or nil for none: the explorer wraps that very load's
    /// services, so nothing of one run's services reaches the next.
    package func load(
        compiled chunk: LuaRef, file: String, initial: LuaValue? = nil, overrides: ((LuaRef) throws -> LuaRef?)? = nil
    ) throws -> RunningFeature {
        do {
            let definition = try definition(calling: chunk, file: file)
            if let overrides { serviceOverrides = try overrides(definition.table) }
            return try perform { try makeFeature(definition, source: file, initial: initial) }
        } catch {
            throw bridge.relative(FeatureError(stage: .load, wrapping: error))
        }
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
