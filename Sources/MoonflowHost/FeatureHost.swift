import Foundation
import LuaKit
import MoonflowLua
import Runtime
import Streams

/// A Swift service callable from Lua as `env.services.NAME(...)`: it gets the
/// call's arguments and returns one value (or throws). Each call from Lua is a
/// cold stream; the closure runs on the work scheduler and its result re-enters
/// the host's state executor.
public typealias LuaService = @Sendable (_ arguments: [LuaValue]) async throws -> LuaValue

/// Owns one Lua state on one serial executor, the plugins loaded into it and
/// the services they may call: the embedding API and what `moonflow run` drives.
///
///     let host = try FeatureHost(configuration: .init(searchPaths: ["plugins"]))
///     host.register(service: "search") { args in ["a!", "b!"] }
///     let search = try host.load("search")
///     try search.send(["type": "query", "text": "a"])
///
/// **Threading:** every Lua call runs on the host's state executor: a serial
/// queue on the real clock, the calling thread on the virtual clock (then the
/// host must be driven from one thread). `send`, `state` and the output
/// streams may be used from any thread.
public final class FeatureHost: @unchecked Sendable {
    public enum Clock: String, Sendable, CaseIterable { case real, virtual }

    /// Moonflow's version (`mf.version` in Lua, `moonflow --version`).
    public static var version: String { MoonflowModule.version }

    public struct Configuration: Sendable {
        /// Folders that hold plugin folders (`plugins/NAME/init.lua`).
        public var searchPaths: [String]
        public var profile: LuaState.Profile
        /// Per handler/reducer/effect call; nil for none.
        public var timeLimitMs: Int64?
        /// For the whole Lua state; nil for none.
        public var memoryLimitMB: Int?
        public var clock: Clock
        /// Whether each plugin gets globals of its own with the sandbox's limits
        /// (`PluginSandbox`); on by default under the sandboxed profile. The spec
        /// runner turns it on in a trusted state: busted keeps the whole library.
        public var isolatesPlugins: Bool
        /// Where declared SQLite repositories keep their files (`--db`).
        public var repositoryStorage: RepositoryStorage

        public init(searchPaths: [String] = ["plugins"], profile: LuaState.Profile = .trusted,
                    timeLimitMs: Int64? = 1000, memoryLimitMB: Int? = 512, clock: Clock = .real,
                    isolatesPlugins: Bool? = nil, repositoryStorage: RepositoryStorage = .asDeclared) {
            self.searchPaths = searchPaths
            self.profile = profile
            self.timeLimitMs = timeLimitMs
            self.memoryLimitMB = memoryLimitMB
            self.clock = clock
            self.isolatesPlugins = isolatesPlugins ?? (profile == .sandboxed)
            self.repositoryStorage = repositoryStorage
        }
    }

    public let configuration: Configuration
    package let lua: LuaState
    public let bridge: LuaBridge
    /// The state executor's scheduler (timers of Lua streams run on it).
    public let scheduler: any Scheduler
    /// The virtual clock, when `clock == .virtual`.
    public let testScheduler: TestScheduler?
    let queue: DispatchQueue?
    private let onQueue = DispatchSpecificKey<Bool>()
    /// Guards `services`, `serviceOrder`, `serviceObjects`, `kept` and `_log`: registering
    /// may happen on any thread while features load on the state executor.
    private let registry = NSLock()
    private var services: [String: LuaService] = [:]
    private var serviceOrder: [String] = []
    /// Services that are objects with methods (repositories): made per feature.
    private var serviceObjects: [ServiceObjects] = []
    typealias ServiceObjects = (FeatureHost, FeatureDefinition) throws -> [(String, LuaPush)]
    private let interactorClass: LuaClass
    /// The interactors made while making the feature being made.
    var newInteractors: [RequestInteractor] = []
    /// The file of the plugin whose feature or interactor is being made (declared SQLite files
    /// are relative to its folder).
    var pluginSource: String?
    private var _log: @Sendable (String, String?) -> Void = { _, _ in }
    /// Where interactors' failures also go (each is a `.log` event of the feature using the interactor).
    public var log: @Sendable (String, String?) -> Void {
        get { registry.withLock { _log } }
        set { registry.withLock { _log = newValue } }
    }

    /// Creates the Lua state with the configured profile and budgets.
    /// - Throws: `LuaError` if the state cannot be created.
    public convenience init(configuration: Configuration = .init()) throws {
        try self.init(configuration: configuration, switchableClock: false)
    }

    /// With `switchableClock`, Lua streams schedule through a `SwitchableScheduler`
    /// (`router`), so hosts made with `init(sharing:clock:)` each run on a clock of their own.
    package init(configuration: Configuration, switchableClock: Bool) throws {
        self.configuration = configuration
        switch configuration.clock {
        case .virtual:
            let test = TestScheduler()
            testScheduler = test
            scheduler = test
            queue = nil
        case .real:
            let q = DispatchQueue(label: "moonflow.host")
            queue = q
            scheduler = QueueScheduler(queue: q)
            testScheduler = nil
        }
        queue?.setSpecific(key: onQueue, value: true)
        let onQueue = self.onQueue
        let lua = try LuaState(profile: configuration.profile,
                               memoryLimit: configuration.memoryLimitMB.map { $0 << 20 },
                               timeLimitMs: configuration.timeLimitMs)
        // Whatever crosses into Swift from a feature is plain data (DESIGN §9).
        lua.plainDataOnly = true
        self.lua = lua
        router = switchableClock ? SwitchableScheduler(target: scheduler) : nil
        bridge = try LuaBridge(lua: lua, scheduler: router ?? scheduler)
        try lua.call(bridge.dispatch.installNext, []) { _ in () }
        if let queue {
            bridge.performer = { block in
                if DispatchQueue.getSpecific(key: onQueue) == true { block() } else { queue.sync(execute: block) }
            }
        }
        interactorClass = try lua.makeClass("moonflow.interactor", methods: RequestInteractor.methods(bridge))
        try MoonflowModule.install(in: lua, bridge: bridge)
        sandbox = configuration.isolatesPlugins ? try PluginSandbox(lua: lua) : nil
        try setSearchPaths(configuration.searchPaths)
        registerDeclaredRepositories()
    }

    /// A host on `parent`'s Lua state, bridge and services, driven by `clock`:
    /// what a test store runs its feature on. `parent` must have been made with
    /// `switchableClock: true`; point its `router` at `clock` while this host runs.
    package init(sharing parent: FeatureHost, clock: TestScheduler) {
        configuration = parent.configuration
        lua = parent.lua
        bridge = parent.bridge
        router = parent.router
        scheduler = clock
        testScheduler = clock
        queue = nil
        (services, serviceOrder, serviceObjects) = parent.registry.withLock { (parent.services, parent.serviceOrder, parent.serviceObjects) }
        interactorClass = parent.interactorClass
        sandbox = parent.sandbox
        _log = parent.log
    }

    /// Where Lua streams schedule, when this host's clock can be switched (test stores).
    package let router: SwitchableScheduler?
    /// Globals per plugin, when plugins are isolated.
    let sandbox: PluginSandbox?

    /// Keeps `object` for as long as this host lives: what Lua code made but may hold only
    /// weakly, because it owns a feature, and so this host's Lua state (a spec's test stores).
    package func keepAlive(_ object: AnyObject) {
        registry.withLock { kept.append(object) }
    }
    private var kept: [AnyObject] = []

    /// Services that replace any of the same name (a test store's stubs): a Lua
    /// table of functions, applied last when a feature's `env` is made.
    package var serviceOverrides: LuaRef?

    /// Runs `body` on the state executor and returns its result.
    public func perform<R>(_ body: () throws -> R) rethrows -> R {
        guard let queue, DispatchQueue.getSpecific(key: onQueue) != true else { return try body() }
        return try queue.sync(execute: body)
    }

    /// The scheduler context features run with: everything on the state executor,
    /// outputs delivered at once (in loop order) from there.
    var context: SchedulerContext { SchedulerContext(state: scheduler, output: ImmediateScheduler.shared, work: scheduler) }

    // MARK: - Services

    /// Registers a Swift service for every feature loaded afterwards.
    ///
    ///     host.register(service: "fetch") { args in try await api.fetch(args[0]) }
    public func register(service name: String, _ service: @escaping LuaService) {
        registry.withLock {
            if services[name] == nil { serviceOrder.append(name) }
            services[name] = service
        }
    }

    /// Registers a Swift service in `Codable` terms: the first argument is decoded
    /// as `Input`, the result encoded from `Output`.
    public func register<Input: Decodable & SendableMetatype, Output: Encodable & SendableMetatype>(
        service name: String, _ service: @escaping @Sendable (Input) async throws -> Output
    ) {
        register(service: name) { args in
            let input = try LuaValueDecoder().decode(Input.self, from: args.first ?? .nil)
            return try LuaValueEncoder().encode(try await service(input))
        }
    }

    /// Registers a service that Lua sees as an object with methods
    /// (`env.services.users:getAll{...}`); `make` builds it for each feature
    /// loaded afterwards (nil: this feature does not get it).
    package func register(serviceObject name: String, _ make: @escaping (FeatureHost, FeatureDefinition) throws -> LuaPush?) {
        register(serviceObjects: { host, definition in try make(host, definition).map { [(name, $0)] } ?? [] })
    }

    /// Registers services that are objects with methods, named per feature: `make`
    /// returns every (name, object) the feature gets (the definition's declared
    /// repositories, say). They win over plain services of the same name.
    package func register(serviceObjects make: @escaping (FeatureHost, FeatureDefinition) throws -> [(String, LuaPush)]) {
        registry.withLock { serviceObjects.append(make) }
    }

    func servicesTable(for definition: FeatureDefinition) throws -> LuaRef {
        let (order, byName, objects) = registry.withLock { (serviceOrder, services, serviceObjects) }
        var fields: [(String, LuaPush)] = []
        for name in order {
            guard let service = byName[name] else { continue }
            fields.append((name, .function { [weak bridge] args in
                guard let bridge else { throw LuaArgumentError(message: "service '\(name)': the host is gone") }
                let values = try args.values()
                let location = args.callerLocation
                let call = Producer<LuaValue>(async: { try await service(values) })
                return [bridge.push(bridge.reenter(call.catchError { .fail(LuaStreamError(service: name, error: $0, location: location)) }, service: name))]
            }))
        }
        for make in objects { fields += try make(self, definition) }
        return try lua.makeTable(fields)
    }

    // MARK: - Loading

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
    public func loadDefinition(_ spec: String) throws -> (FeatureDefinition, String) {
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
    public func load(_ spec: String, initial: LuaValue? = nil) throws -> RunningFeature {
        try loadNow(spec, initial: initial)
    }

    private func loadNow(_ spec: String, initial: LuaValue?) throws -> RunningFeature {
        let (definition, file) = try loadDefinition(spec)
        return try perform { try makeFeature(definition, source: file, initial: initial) }
    }

    /// Loads a plugin without blocking the caller (the main actor, say): the
    /// work runs on the state executor and the caller resumes when it is done.
    public func load(_ spec: String, initial: LuaValue? = nil) async throws -> RunningFeature {
        guard let queue else { return try loadNow(spec, initial: initial) }
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

    func makeFeature(_ definition: FeatureDefinition, source: String, initial: LuaValue? = nil) throws -> RunningFeature {
        let outer = pluginSource
        pluginSource = source
        defer { pluginSource = outer }
        switch definition.kind {
        case .feature:
            let (env, interactors) = try makeEnvCollectingInteractors(definition)
            let feature = try LuaFeature(definition: definition, bridge: bridge, env: env, source: source, context: context, initial: initial)
            attachLogs(of: interactors, to: feature)
            return feature
        case .compose:
            return try LuaComposite(definition: definition, bridge: bridge, children: try makeChildren(definition, source: source, initial: initial), source: source)
        case .interactor:
            throw HostError("\(source) defines an mf.interactor, not a feature: features use it through env.interactors")
        }
    }

    /// The children of an `mf.compose`: plugin names (found in the search paths) or definitions.
    private func makeChildren(_ definition: FeatureDefinition, source: String, initial: LuaValue?) throws -> [(String, RunningFeature)] {
        try childDefinitions(definition, source: source).map { name, def, file in
            (name, try makeFeature(def, source: file, initial: initial?[name]))
        }
    }

    /// The children an `mf.compose` names, in name order: each with its
    /// definition and the file it came from (a plugin's `init.lua`, or the
    /// parent's file for a feature table written there).
    func childDefinitions(_ definition: FeatureDefinition, source: String) throws -> [(String, FeatureDefinition, String)] {
        let entries: [(String, LuaRef?, String?)] = try lua.rawGet(definition.table, "children") { slots in
            var names: [String] = []
            try slots.forEachField(1) { k, _ in names.append(k) }
            return try names.sorted().map { name in
                try slots.field(1, name) { child in
                    if child.isTable(1) { return (name, try child.ref(1), nil) }
                    guard let plugin = try child.value(1, path: "children.\(name)").stringValue else {
                        throw HostError("\(source): children.\(name) must be a plugin name or a feature table (got \(child.typeName(1)))")
                    }
                    return (name, nil, plugin)
                }
            }
        }
        guard !entries.isEmpty else { throw HostError("\(source): mf.compose needs at least one child in `children`") }
        return try entries.map { name, table, plugin in
            if let table {
                let def = try lua.call(bridge.dispatch.identity, [.ref(table)]) { try FeatureDefinition.read($0, 1, kind: nil) }
                return (name, def, source)
            }
            let (def, file) = try loadDefinition(plugin!)
            return (name, def, file)
        }
    }

    /// A feature's `env` and the request interactors made for it.
    func makeEnvCollectingInteractors(_ definition: FeatureDefinition) throws -> (LuaRef, [RequestInteractor]) {
        newInteractors = []
        defer { newInteractors = [] }
        let env = try makeEnv(definition)
        return (env, newInteractors)
    }

    /// An interactor's failures are `.log` events of the feature using it (and go to `log`).
    func attachLogs(of interactors: [RequestInteractor], to feature: LuaFeature) {
        for interactor in interactors {
            interactor.log = { [weak feature, weak self] message, location in
                feature?.log(message, location: location)
                self?.log(message, location)
            }
        }
    }

    func makeEnv(_ definition: FeatureDefinition) throws -> LuaRef {
        let interactors = try interactorsTable(definition)
        let overrides: LuaPush = serviceOverrides.map { .ref($0) } ?? .value(.nil)
        return try lua.call(bridge.dispatch.makeEnv, [.ref(definition.table), .ref(try servicesTable(for: definition)), .ref(interactors),
                                                      bridge.serviceResult(definition), overrides]) { try $0.ref(1) }
    }

    /// `env.interactors`: the definition's `interactors = { name = mf.interactor{...} | "plugin" }`.
    func interactorsTable(_ definition: FeatureDefinition) throws -> LuaRef {
        var fields: [(String, LuaPush)] = []
        let entries: [(String, LuaRef?)] = try lua.rawGet(definition.table, "interactors") { slots in
            guard slots.isTable(1) else { return [] }
            var names: [String] = []
            try slots.forEachField(1) { k, _ in names.append(k) }
            return try names.sorted().map { name in try slots.field(1, name) { ($0.isTable(1) ? (name, try $0.ref(1)) : (name, nil)) } }
        }
        for (name, table) in entries {
            let def: FeatureDefinition
            var source = pluginSource
            if let table {
                def = try lua.call(bridge.dispatch.identity, [.ref(table)]) { try FeatureDefinition.read($0, 1, kind: .interactor) }
            } else {
                let pluginName: String = try lua.rawGet(definition.table, "interactors") { try $0.field(1, name) { try $0.string(1) } }
                (def, source) = try loadDefinition(pluginName)
                guard def.kind == .interactor else { throw HostError("interactors.\(name): plugin '\(pluginName)' is not an mf.interactor") }
            }
            let interactor = RequestInteractor(definition: def, bridge: bridge)
            let outer = pluginSource
            pluginSource = source
            defer { pluginSource = outer }
            interactor.env = try makeEnv(def)
            interactor.log = { [weak self] message, location in self?.log(message, location) }
            newInteractors.append(interactor)
            fields.append((name, .object(interactor, interactorClass)))
        }
        return try lua.makeTable(fields)
    }
}

/// A host-level problem (a missing plugin, a file that returns no definition).
public struct HostError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// A loaded feature passed from the state queue to an async caller under a lock.
private final class Handover: @unchecked Sendable {
    private let lock = NSLock()
    private var result: Result<RunningFeature, any Error>?
    func put(_ r: Result<RunningFeature, any Error>) { lock.withLock { result = r } }
    func take() throws -> RunningFeature { try lock.withLock { result! }.get() }
}
