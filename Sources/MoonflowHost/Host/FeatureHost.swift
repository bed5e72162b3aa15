import Foundation
import LuaKit
import LuaRepositories
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
/// **Threading:** every Lua call runs on the host's state executor: on the real
/// clock a private serial queue, or the main thread (`executor: .mainActor`, for
/// a UI: `send` on the main actor has reduced when it returns); the calling
/// thread on the virtual clock (then the host must be driven from one thread). `send`, `state` and the output
/// streams may be used from any thread.
public final class FeatureHost: @unchecked Sendable {
    /// Where a host on the real clock runs its Lua code and delivers its events.
    package enum StateExecutor: String, Sendable, CaseIterable {
        /// A private serial queue: `send` queues the action and returns. For servers and tools.
        case queue
        /// The main thread, for an app's UI. `send` called on the main actor runs `handle` and
        /// every synchronous mutation's `reduce` before it returns, so a view reads the new state
        /// at once; an action sent meanwhile (by an observer) runs next, before the outer `send`
        /// returns. Timers fire on the main run loop in real time; Swift services run off the
        /// main actor and their results re-enter on it. Lua code here runs on the main thread:
        /// keep it fast (the time limit still stops a runaway call).
        case mainActor
    }

    public struct Configuration: Sendable {
        /// Folders that hold plugin folders (`plugins/NAME/init.lua`).
        public var searchPaths: [String]
        public var profile: LuaState.Profile
        /// Per handler/reducer/effect call; nil for none.
        public var timeLimitMs: Int64?
        /// For the whole Lua state; nil for none.
        public var memoryLimitMB: Int?
        /// Whether Lua runs on the virtual clock (`MoonflowHostTools`' `clock`): time moves only
        /// when the driver moves it.
        package var virtualClock = false
        /// Whether each plugin gets globals of its own with the sandbox's limits
        /// (`PluginSandbox`); on by default under the sandboxed profile. The spec
        /// runner turns it on in a trusted state: busted keeps the whole library.
        public var isolatesPlugins: Bool
        /// Keeps the repositories plugins declare with a file (`sqlite = "NAME.db"`); nil:
        /// every declared repository is a fresh in-memory one, seeded (MoonflowRepositories'
        /// `repositoryFiles`).
        package var declaredRepositoryFiles: (any RepositoryFiles)?
        /// Where Lua runs on the real clock: a private queue (default) or the main thread
        /// (what `MainActorHost` asks for: an app reaches the main actor through its type). On
        /// the virtual clock Lua runs on the thread that drives the clock, whatever this says.
        package var executor: StateExecutor = .queue
        /// Plugins that are not in a folder (text in memory, an app's store), looked in after
        /// the search paths, in order (`MoonflowHostTools`' `sources`). The host's own `memory`
        /// source comes first.
        package var pluginTexts: [any PluginTexts] = []
        /// The seed of the plugins' random numbers (`math.random`, `env.random`, `env.uuid`);
        /// nil: `FeatureInputs.defaultSeed` on the virtual clock, a fresh one on the real clock.
        package var seed: Int64?

        public init(
            searchPaths: [String] = ["plugins"], profile: LuaState.Profile = .trusted,
            timeLimitMs: Int64? = 1000, memoryLimitMB: Int? = 512, isolatesPlugins: Bool? = nil
        ) {
            self.searchPaths = searchPaths
            self.profile = profile
            self.timeLimitMs = timeLimitMs
            self.memoryLimitMB = memoryLimitMB
            self.isolatesPlugins = isolatesPlugins ?? (profile == .sandboxed)
        }

        /// A configuration with its executor named (the package's tests and probes).
        package init(searchPaths: [String] = ["plugins"], timeLimitMs: Int64? = 1000, executor: StateExecutor) {
            self.init(searchPaths: searchPaths, timeLimitMs: timeLimitMs)
            self.executor = executor
        }
    }

    public let configuration: Configuration
    /// Plugins held as text by the host itself: `load(name:source:)` puts them here, and
    /// `memory.set` changes them for `reload` (`MoonflowHostTools`' `memory`).
    package let memoryTexts: MemoryTexts
    /// Every source of plugins besides the search paths: connected dev servers, `memory`, then
    /// the configured ones.
    var sources: [any PluginTexts] { devServers + [memoryTexts] + configuration.pluginTexts }
    /// The dev servers `connect(devServer:)` connected, whose plugins come before the search paths'.
    var devServers: [DevServerConnection] { registry.withLock { _devServers } }
    private var _devServers: [DevServerConnection] = []

    func addDevServer(_ source: DevServerConnection) {
        registry.withLock { _devServers.append(source) }
    }
    package let lua: LuaState
    package let bridge: LuaBridge
    /// The state executor's scheduler (timers of Lua streams run on it).
    package let scheduler: any Scheduler
    /// The virtual clock, when `configuration.virtualClock`.
    package let testScheduler: TestScheduler?
    let queue: DispatchQueue?
    /// Whether Lua runs on the main actor (`executor: .mainActor` on the real clock). Asked of
    /// the configuration: on Linux each `DispatchQueue.main` is a new wrapper, never `===`.
    var runsOnMainActor: Bool { !configuration.virtualClock && configuration.executor == .mainActor }
    private let onQueue = DispatchSpecificKey<Bool>()
    /// Whether the calling thread is the state executor's (its queue, or the main thread).
    private let isOnExecutor: @Sendable () -> Bool
    /// Guards `services`, `serviceOrder`, `serviceObjects`, `kept`, `_devServers` and `_log`: registering
    /// may happen on any thread while features load on the state executor.
    private let registry = NSLock()
    private var services: [String: LuaService] = [:]
    private var serviceOrder: [String] = []
    /// Services that are objects with methods (repositories): made per feature.
    private var serviceObjects: [ServiceObjects] = []
    typealias ServiceObjects = (FeatureHost, FeatureDefinition) throws -> [(String, LuaPush)]
    let interactorClass: LuaClass
    /// The file of the plugin whose feature or interactor is being made (declared SQLite files
    /// are relative to its folder).
    var pluginSource: String?
    private var _log: @Sendable (String, String?) -> Void = { _, _ in }
    /// Where interactors' failures also go (each is a `.log` event of the feature using the interactor).
    package var log: @Sendable (String, String?) -> Void {
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
        memoryTexts = MemoryTexts()
        if configuration.virtualClock {
            let test = TestScheduler()
            testScheduler = test
            scheduler = test
            queue = nil
        } else if configuration.executor == .mainActor {
            queue = .main
            scheduler = MainScheduler.shared
            testScheduler = nil
        } else {
            let q = DispatchQueue(label: "moonflow.host")
            queue = q
            scheduler = QueueScheduler(queue: q)
            testScheduler = nil
        }
        let onMain = !configuration.virtualClock && configuration.executor == .mainActor
        if !onMain { queue?.setSpecific(key: onQueue, value: true) }
        let onQueue = self.onQueue
        if onMain {
            isOnExecutor = { MainScheduler.isCurrent }
        } else {
            isOnExecutor = { DispatchQueue.getSpecific(key: onQueue) == true }
        }
        let isOnExecutor = self.isOnExecutor
        let lua = try LuaState(
            profile: configuration.profile,
            memoryLimit: configuration.memoryLimitMB.map(FeatureHost.bytes(megabytes:)),
            timeLimitMs: configuration.timeLimitMs)
        // Whatever crosses into Swift from a feature is plain data.
        lua.plainDataOnly = true
        self.lua = lua
        router = switchableClock ? SwitchableScheduler(target: scheduler) : nil
        bridge = try LuaBridge(lua: lua, scheduler: router ?? scheduler)
        // What a feature reports names its files from the plugin folders given (an app's bundle
        // path is no help in a message); folders given relative stay as given.
        bridge.locationRoots = configuration.searchPaths.filter { $0.hasPrefix("/") }
            .map { ($0 as NSString).standardizingPath }.map { $0.hasSuffix("/") ? $0 : $0 + "/" }
        try lua.call(bridge.dispatch.installNext, []) { _ in () }
        if queue != nil { bridge.setExecutorCheck(isOnExecutor) }
        if let queue {
            // Nothing more runs on a stuck state: work waiting behind the stuck call is
            // dropped when its turn comes (LuaBridge.perform throws FeatureError.stuck).
            bridge.performer = { [unowned lua] block in
                if isOnExecutor() { block(); return }
                guard !lua.isStuck else { return }
                queue.sync { if !lua.isStuck { block() } }
            }
        }
        interactorClass = try lua.makeClass("moonflow.interactor", methods: RequestInteractor.methods(bridge))
        try MoonflowModule.install(in: lua, bridge: bridge)
        sandbox = configuration.isolatesPlugins ? try PluginSandbox(lua: lua, inputs: bridge.dispatch.inputs) : nil
        try installSourceSearcher()
        if let sandbox {
            sandbox.sources.split = { [weak self] file in self?.sourceFile(file).map { ("\($0.0.name):", $0.1) } }
            sandbox.sources.text = { [weak self] file in
                guard let self, let (source, path) = self.sourceFile(file) else { return nil }
                return try source.text(at: path)
            }
        }
        try setSearchPaths(configuration.searchPaths)
        registerDeclaredRepositories()
        seed =
            configuration.seed ?? (configuration.virtualClock ? FeatureInputs.defaultSeed : FeatureInputs.freshSeed())
        try startInputs()
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
        isOnExecutor = { true }
        (services, serviceOrder, serviceObjects) = parent.registry.withLock {
            (parent.services, parent.serviceOrder, parent.serviceObjects)
        }
        interactorClass = parent.interactorClass
        sandbox = parent.sandbox
        memoryTexts = parent.memoryTexts
        _log = parent.log
        seed = parent.seed
    }

    /// The seed the plugins' random numbers started from (`Configuration.seed`, or the one drawn).
    package private(set) var seed: Int64 = FeatureInputs.defaultSeed

    /// Starts the plugins' time and random numbers (`FeatureInputs`) on this host's clock from
    /// `seed` (the host's own when nil), with the taps a recorded run or a replay gives. A
    /// trusted state's own globals get the controlled `os` functions (its plugins', and a spec's
    /// inline features'); isolated plugins get them in their own globals (`PluginSandbox`).
    package func startInputs(
        seed: Int64? = nil, record: (@Sendable (String, LuaValue) -> Void)? = nil,
        feed: (@Sendable (String) -> LuaValue?)? = nil
    ) throws {
        if let seed { self.seed = seed }
        try FeatureInputs.start(
            bridge, virtual: configuration.virtualClock, seed: self.seed,
            installGlobals: configuration.profile == .trusted, record: record,
            feed: feed)
    }

    /// `megabytes` in bytes, saturating: a shift would wrap a huge count into a small, a
    /// negative or no limit at all.
    package static func bytes(megabytes: Int) -> Int {
        megabytes > Int.max >> 20 ? Int.max : megabytes < Int.min >> 20 ? Int.min : megabytes << 20
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

    /// Whether a failed `reload` or `restart` is also an `.error` event of the feature (on by
    /// default; the tool reports its own, after its debounce).
    package var reportsReloadFailures: Bool {
        get { registry.withLock { _reportsReloadFailures } }
        set { registry.withLock { _reportsReloadFailures = newValue } }
    }
    private var _reportsReloadFailures = true

    /// Services that replace any of the same name (a test store's stubs): a Lua
    /// table of functions, applied last when a feature's `env` is made.
    package var serviceOverrides: LuaRef?
    /// What replaces `env.now`, `env.uuid` or `env.random` (a test store's `env` stubs): a Lua
    /// table of functions by those names, applied when a feature's `env` is made.
    package var envOverrides: LuaRef?

    /// Whether a state given to start a feature from fills in from its definition's `initial`
    /// (a test store's `opts.state`): the given top-level fields replace `initial`'s, the others
    /// come from it (a shallow merge, `FeatureHost.merged`). Off: the given state replaces `initial`.
    package var mergesInitialState = false

    /// `value` bound to this host's state executor: its queue on the real clock (checked in debug
    /// builds); on the virtual clock the one thread that drives the host, which is not checked.
    func stateBound<Value>(_ value: Value) -> ExecutorBound<Value> {
        guard queue != nil else { return ExecutorBound(value) { true } }
        return ExecutorBound(value, isOnExecutor: isOnExecutor)
    }

    /// Runs `body` on the state executor and returns its result, waiting for it (for the
    /// tools and tests: an app's caller could deadlock with an observer waiting for it).
    package func perform<R>(_ body: () throws -> R) rethrows -> R {
        guard let queue, !isOnExecutor() else { return try body() }
        return try queue.sync(execute: body)
    }

    /// Whether the Lua state is stuck: a call ran on past its time limit in code the limit
    /// cannot interrupt (`LuaState.isStuck`, the watchdog's last resort). For good: from then
    /// on every `send` throws `FeatureError.stuck`, work queued behind the stuck call is
    /// dropped when its turn comes, and the host's features take nothing more. Load the
    /// plugins again in a new host (with their last `state` as `initial`, to keep it).
    public var isStuck: Bool { lua.isStuck }

    /// As `perform`, for a caller that must not wait on a stuck state: when the state gets
    /// stuck meanwhile (`isStuck`), the wait ends with nil, and `body`, if it has not
    /// started, never runs. On the virtual clock `body` runs here, as `perform` does.
    package func performUnlessStuck<R>(_ body: @escaping () throws -> R) throws -> R? {
        guard let queue, !isOnExecutor() else { return try body() }
        if lua.isStuck { return nil }
        let call = AbandonableCall(body)
        queue.async { call.run() }
        while call.done.wait(timeout: .now() + .milliseconds(20)) == .timedOut {
            if lua.isStuck { call.abandon(); return nil }
        }
        return try call.result?.get()
    }

    /// The scheduler context features run with: everything on the state executor,
    /// outputs delivered at once (in loop order) from there.
    var context: SchedulerContext {
        SchedulerContext(state: scheduler, output: ImmediateScheduler.shared, work: scheduler)
    }

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
    package func register(
        serviceObject name: String, _ make: @escaping (FeatureHost, FeatureDefinition) throws -> LuaPush?
    ) {
        register(serviceObjects: { host, definition in try make(host, definition).map { [(name, $0)] } ?? [] })
    }

    /// Registers services that are objects with methods, named per feature: `make`
    /// returns every (name, object) the feature gets (the definition's declared
    /// repositories, say). They win over plain services of the same name.
    package func register(serviceObjects make: @escaping (FeatureHost, FeatureDefinition) throws -> [(String, LuaPush)])
    {
        registry.withLock { serviceObjects.append(make) }
    }

    func servicesTable(for definition: FeatureDefinition) throws -> LuaRef {
        let (order, objects) = registry.withLock { (serviceOrder, serviceObjects) }
        var fields: [(String, LuaPush)] = order.map { ($0, .function(serviceFunction($0))) }
        for make in objects { fields += try make(self, definition) }
        return try lua.makeTable(fields)
    }

    /// The Lua function for the Swift service `name`. It finds the service when called, so one
    /// registered again later replaces it for features already loaded.
    private func serviceFunction(_ name: String) -> LuaFunction {
        { [weak self] args in
            guard let self else { throw LuaArgumentError(message: "service '\(name)': the host is gone") }
            guard let service = self.registry.withLock({ self.services[name] }) else { throw self.unregistered(name) }
            let values = try args.values()
            let location = args.callerLocation
            let bridge = self.bridge
            // Marked, so that `idle()` awaited inside it throws instead of waiting for itself.
            // The stream lives in the Lua state the bridge owns: held weakly, or the state
            // would keep itself alive through its own service calls (ReleaseTests).
            let call = Producer<LuaValue>(async: { [weak bridge] in
                guard let bridge else { throw CancellationError() }
                return try await ServiceCall.serving(name, through: bridge) { try await service(values) }
            })
            return [
                bridge.push(
                    bridge.reenter(
                        call.catchError { .fail(LuaStreamError(service: name, error: $0, location: location)) },
                        service: name))
            ]
        }
    }

    /// What `env.services.NAME` finds for a name the feature was not loaded with: a service
    /// registered since, or an error that names the registered ones.
    var lateService: LuaFunction {
        { [weak self] args in
            guard let self else { throw LuaArgumentError(message: "services: the host is gone") }
            guard let name = try args.value(2, path: "service name").stringValue else { return [.value(.nil)] }
            guard self.registry.withLock({ self.services[name] }) != nil else { throw self.unregistered(name) }
            return [.function(self.serviceFunction(name))]
        }
    }

    private func unregistered(_ name: String) -> LuaArgumentError {
        let names = registry.withLock { serviceOrder.filter { services[$0] != nil } }
        let registered = names.isEmpty ? "none is registered" : "registered: " + names.joined(separator: ", ")
        return LuaArgumentError(
            message:
                "service '\(name)' is not registered with the host (\(registered)); register it with host.register(service: \"\(name)\")"
        )
    }

}

/// A call a waiter may walk away from: run once on the executor unless abandoned first.
/// (The body may be the stuck call itself: the waiter then leaves it running.)
private final class AbandonableCall<R>: @unchecked Sendable {
    private let lock = NSLock()
    private var body: (() throws -> R)?
    private(set) var result: Result<R, any Error>?
    let done = DispatchSemaphore(value: 0)

    init(_ body: @escaping () throws -> R) { self.body = body }

    func run() {
        guard
            let body = lock.withLock({
                let b = self.body; self.body = nil; return b
            })
        else { return }
        let outcome = Result { try body() }
        lock.withLock { result = outcome }
        done.signal()
    }

    func abandon() { lock.withLock { body = nil } }
}
