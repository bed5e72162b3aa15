import Foundation
import LuaKit
import MoonflowLua
import Runtime
import Streams
import StreamsTesting

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

        public init(searchPaths: [String] = ["plugins"], profile: LuaState.Profile = .trusted,
                    timeLimitMs: Int64? = 1000, memoryLimitMB: Int? = 512, clock: Clock = .real) {
            self.searchPaths = searchPaths
            self.profile = profile
            self.timeLimitMs = timeLimitMs
            self.memoryLimitMB = memoryLimitMB
            self.clock = clock
        }
    }

    public let configuration: Configuration
    public let lua: LuaState
    public let bridge: LuaBridge
    /// The state executor's scheduler (timers of Lua streams run on it).
    public let scheduler: any Scheduler
    /// The virtual clock, when `clock == .virtual`.
    public let testScheduler: TestScheduler?
    let queue: DispatchQueue?
    private let onQueue = DispatchSpecificKey<Bool>()
    private var services: [String: LuaService] = [:]
    private var serviceOrder: [String] = []
    /// Services that are objects with methods (repositories): made per feature.
    private var serviceObjects: [(FeatureHost, FeatureDefinition) throws -> [(String, LuaPush)]] = []
    private let interactorClass: LuaClass
    /// The interactors made while making the feature being made.
    private var newInteractors: [RequestInteractor] = []
    /// Where interactors' failures also go (each is a `.log` event of the feature using the interactor).
    public var log: @Sendable (String, String?) -> Void = { _, _ in }

    /// Creates the Lua state with the configured profile and budgets.
    /// - Throws: `LuaError` if the state cannot be created.
    public init(configuration: Configuration = .init()) throws {
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
        let lua = try LuaState(profile: configuration.profile,
                               memoryLimit: configuration.memoryLimitMB.map { $0 << 20 },
                               timeLimitMs: configuration.timeLimitMs)
        self.lua = lua
        bridge = try LuaBridge(lua: lua, scheduler: scheduler)
        interactorClass = try lua.makeClass("moonflow.interactor", methods: RequestInteractor.methods(bridge))
        try MoonflowModule.install(in: lua, bridge: bridge)
        try setSearchPaths(configuration.searchPaths)
        registerDeclaredRepositories()
    }

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
        if services[name] == nil { serviceOrder.append(name) }
        services[name] = service
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
    public func register(serviceObject name: String, _ make: @escaping (FeatureHost, FeatureDefinition) throws -> LuaPush?) {
        serviceObjects.append { host, definition in try make(host, definition).map { [(name, $0)] } ?? [] }
    }

    /// Registers services that are objects with methods, named per feature: `make`
    /// returns every (name, object) the feature gets (the definition's declared
    /// repositories, say). They win over plain services of the same name.
    public func register(serviceObjects make: @escaping (FeatureHost, FeatureDefinition) throws -> [(String, LuaPush)]) {
        serviceObjects.append(make)
    }

    func servicesTable(for definition: FeatureDefinition) throws -> LuaRef {
        var fields: [(String, LuaPush)] = []
        for name in serviceOrder {
            guard let service = services[name] else { continue }
            let bridge = self.bridge
            fields.append((name, .function { [unowned bridge] args in
                let values = try args.values()
                let call = Producer<LuaValue>(async: { try await service(values) })
                return [bridge.push(bridge.reenter(call.catchError { .fail(LuaStreamError($0)) }))]
            }))
        }
        for make in serviceObjects { fields += try make(self, definition) }
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
            let chunk = try lua.load(file: file)
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
    public func load(_ spec: String) throws -> RunningFeature {
        let (definition, file) = try loadDefinition(spec)
        return try perform { try makeFeature(definition, source: file) }
    }

    func makeFeature(_ definition: FeatureDefinition, source: String) throws -> RunningFeature {
        switch definition.kind {
        case .feature:
            newInteractors = []
            let env = try makeEnv(definition)
            let feature = try LuaFeature(definition: definition, bridge: bridge, env: env, source: source, context: context)
            // Its interactors' failures are `.log` events of the feature (and go to `log`).
            for interactor in newInteractors {
                interactor.log = { [weak feature, unowned self] message, location in
                    feature?.log(message, location: location)
                    self.log(message, location)
                }
            }
            return feature
        case .compose:
            return try LuaComposite(definition: definition, bridge: bridge, children: try makeChildren(definition, source: source), source: source)
        case .interactor:
            throw HostError("\(source) defines an mf.interactor, not a feature: features use it through env.interactors")
        }
    }

    /// The children of an `mf.compose`: plugin names (found in the search paths) or definitions.
    private func makeChildren(_ definition: FeatureDefinition, source: String) throws -> [(String, RunningFeature)] {
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
                return (name, try makeFeature(def, source: source))
            }
            let (def, file) = try loadDefinition(plugin!)
            return (name, try makeFeature(def, source: file))
        }
    }

    func makeEnv(_ definition: FeatureDefinition) throws -> LuaRef {
        let interactors = try interactorsTable(definition)
        return try lua.call(bridge.dispatch.makeEnv, [.ref(definition.table), .ref(try servicesTable(for: definition)), .ref(interactors),
                                                      bridge.serviceResult(definition)]) { try $0.ref(1) }
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
            if let table {
                def = try lua.call(bridge.dispatch.identity, [.ref(table)]) { try FeatureDefinition.read($0, 1, kind: .interactor) }
            } else {
                let pluginName: String = try lua.rawGet(definition.table, "interactors") { try $0.field(1, name) { try $0.string(1) } }
                def = try loadDefinition(pluginName).0
                guard def.kind == .interactor else { throw HostError("interactors.\(name): plugin '\(pluginName)' is not an mf.interactor") }
            }
            let interactor = RequestInteractor(definition: def, bridge: bridge)
            interactor.env = try makeEnv(def)
            interactor.log = { [unowned self] message, location in self.log(message, location) }
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
