import Foundation
import LuaKit
import MoonflowHost
import MoonflowHostTools
import MoonflowLua
import Streams

/// `require "moonflow.test"`: the test store for Lua specs.
///
///     local T = require "moonflow.test"
///     local store = T.store("counter", { services = { ... }, state = { ... }, exhaustive = true })
///     store:send({ type = "increment" }, function(s) s.count = 1 end)
///     store:advance(300)
///     store:receive({ type = "add", n = 1 }, function(s) s.count = 2 end)
///     store:receiveEffect({ type = "milestone", count = 10 })
///     store:finish()
///
/// Each store runs its feature on a `FeatureHost` sharing the spec's Lua state,
/// with a virtual clock of its own. Failures are raised at the spec's line
/// (through busted's `fail` when busted runs the spec, so they count as
/// failures rather than errors).
public enum TestModule {
    /// Registers `moonflow.test` in `host`'s Lua state. `host` must run on the
    /// virtual clock with a switchable scheduler (`FeatureHost.forSpecs`).
    public static func install(in host: FeatureHost) throws {
        try install(in: host, explore: ExploreDefaults())
    }

    /// What `moonflow test --seed/--runs/--length` sets for every `T.explore` of the run
    /// (each overrides the spec's own option); nil: the spec's, else the explorer's default.
    package struct ExploreDefaults: Sendable {
        package var seed: Int64?
        package var runs: Int?
        package var length: Int?
        /// The exploration's own budget (`--steps`, `--seconds`): steps over its runs and its
        /// shrinking, and seconds of wall time.
        package var steps: Int?
        package var seconds: Double?
        /// `--no-guided`: false, every run drawn uniformly (as `guided = false`); nil: the spec's.
        package var guided: Bool?
        /// Under the debugger, what explorations read from the wall clock and chance, kept so a
        /// spec file run again from its start (going back) explores exactly as it did.
        package var decisions: ExploreDecisions?
        package init(
            seed: Int64? = nil, runs: Int? = nil, length: Int? = nil, steps: Int? = nil, seconds: Double? = nil,
            guided: Bool? = nil
        ) {
            self.seed = seed
            self.runs = runs
            self.length = length
            self.steps = steps
            self.seconds = seconds
            self.guided = guided
        }
    }

    /// Registers `moonflow.test` with the command line's exploration settings.
    package static func install(in host: FeatureHost, explore defaults: ExploreDefaults) throws {
        let lua = host.lua
        let decisions = defaults.decisions
        @Sendable func kept(_ read: () -> LuaValue) -> LuaValue { decisions?.take(read) ?? read() }
        let storeClass = try lua.makeClass("moonflow.teststore", methods: [:])
        func store(_ args: LuaSlots) throws -> FeatureStore {
            guard let handle = args.object(1, as: StoreHandle.self) else {
                throw args.bad(1, "store method", "test store")
            }
            guard let s = handle.store else {
                throw FeatureStore.Failure("the test store is gone (the spec's host was released)")
            }
            return s
        }
        /// Runs a step; a `Failure` becomes `false, message` for the Lua side to raise at the spec's line.
        func step(_ body: () throws -> [LuaPush]) -> [LuaPush] {
            do { return try body() } catch let failure as FeatureStore.Failure {
                return [.value(false), .value(.string(LuaString(failure.message)))]
            } catch {
                return [.value(false), .value(.string(LuaString(String(describing: error))))]
            }
        }
        let core: [(String, LuaPush)] = [
            (
                "new",
                .function { [weak host] args in
                    guard let host else { return [.value(.nil), .value("the test host is gone")] }
                    return step {
                        let storeHost = FeatureHost(sharing: host, clock: TestScheduler())
                        if args.isTable(2) { storeHost.serviceOverrides = try args.ref(2) }
                        // `opts.state` fills in from `initial`: a spec gives only the fields it is about.
                        storeHost.mergesInitialState = true
                        if !args.isNil(7) { storeHost.envOverrides = try args.ref(7) }
                        // Each store draws from the start of its seed's sequence: opts.seed, else
                        // `moonflow test --seed`, else the default.
                        let seed: Int64 =
                            args.isNil(8)
                            ? (defaults.seed ?? FeatureInputs.defaultSeed)
                            : (try args.value(8, path: "opts.seed")).intValue ?? FeatureInputs.defaultSeed
                        try FeatureInputs.reseed(host.bridge, seed: seed)
                        let initial: LuaValue? = args.isNil(3) ? Optional.none : try args.value(3, path: "opts.state")
                        let exhaustive = args.isNil(4) ? true : (try args.value(4)).isTruthy
                        let feature: RunningFeature
                        do {
                            feature = try host.router!.with(storeHost.testScheduler!) {
                                // A plugin compiled by `compile` (the explorer's runs): a fresh
                                // definition, its services replaced by what arg 2 makes of it.
                                if args.isFunction(1) {
                                    let wrap = args.isFunction(2) ? try args.ref(2) : nil
                                    return try storeHost.load(
                                        compiled: try args.ref(1), file: try args.string(5), initial: initial,
                                        overrides: wrap.map { wrap in
                                            { definition in
                                                try host.lua.call(wrap, [.ref(definition)]) {
                                                    $0.isTable(1) ? try $0.ref(1) : nil
                                                }
                                            }
                                        })
                                }
                                if args.isTable(1) {
                                    let source = args.isNil(5) ? "spec" : try args.string(5)
                                    return try storeHost.load(table: try args.ref(1), source: source, initial: initial)
                                }
                                guard let name = try args.value(1).stringValue else {
                                    throw FeatureStore.Failure(
                                        "T.store(pluginOrFeature [, opts]): give a plugin name, a plugin folder, or an mf.feature{...} table (got \(args.typeName(1)))"
                                    )
                                }
                                return try storeHost.load(name, initial: initial)
                            }
                        } catch let failure as FeatureStore.Failure {
                            throw failure
                        } catch {
                            let (message, location) = LuaErrorReport.describe(error, fallback: nil)
                            throw FeatureStore.Failure("T.store: \(location.map { "\($0): " } ?? "")\(message)")
                        }
                        let store = FeatureStore(host: storeHost, feature: feature, exhaustive: exhaustive)
                        let handle = StoreHandle(store)
                        // The explorer's stores (thousands in a spec) are held by their handle until
                        // `exploreStop` lets go; a spec's own live as long as the spec's host.
                        if !args.isNil(6), (try args.value(6)).isTruthy {
                            handle.owned = store
                        } else {
                            host.keepAlive(store)
                        }
                        return [.object(handle, storeClass)]
                    }
                }
            ),
            (
                // A plugin's init.lua compiled once (`FeatureHost.compilePlugin`), and its file:
                // `new` runs it for a fresh definition per store.
                "compile",
                .function { [weak host] args in
                    guard let host else { return [.value(.nil), .value("the test host is gone")] }
                    return step {
                        do {
                            let (chunk, file) = try host.compilePlugin(try args.string(1))
                            return [.ref(chunk), .value(.string(LuaString(file)))]
                        } catch {
                            let (message, location) = LuaErrorReport.describe(error, fallback: nil)
                            throw FeatureStore.Failure("T.explore: \(location.map { "\($0): " } ?? "")\(message)")
                        }
                    }
                }
            ),
            (
                "send",
                .function { args in
                    let s = try store(args)
                    let action = try args.value(2, path: "action")
                    return step { [.value(true), .value(try s.beginSend(action).base)] }
                }
            ),
            (
                "receive",
                .function { args in
                    let s = try store(args)
                    let mutation = try args.value(2, path: "mutation")
                    let partial = args.isNil(3) ? false : (try args.value(3)).isTruthy
                    return step { [.value(true), .value(try s.beginReceive(mutation, partial: partial).base)] }
                }
            ),
            (
                "complete",
                .function { args in
                    let s = try store(args)
                    let expected: LuaValue? = args.isNil(2) ? Optional.none : try args.value(2, path: "expected state")
                    return step {
                        try s.complete(expected: expected); return [.value(true)]
                    }
                }
            ),
            (
                "receiveEffect",
                .function { args in
                    let s = try store(args)
                    let effect = try args.value(2, path: "effect")
                    let from = args.isNil(3) ? nil : try args.string(3, function: "receiveEffect")
                    return step {
                        try s.checkEffect(effect, from: from); return [.value(true)]
                    }
                }
            ),
            (
                "receiveError",
                .function { args in
                    let s = try store(args)
                    let text = try args.string(2, function: "receiveError")
                    return step {
                        try s.checkError(text); return [.value(true)]
                    }
                }
            ),
            (
                "finish",
                .function { args in
                    let s = try store(args)
                    return step {
                        try s.checkFinish(); return [.value(true)]
                    }
                }
            ),
            (
                "advance",
                .function { args in
                    let s = try store(args)
                    let ms = try args.integer(2, function: "advance")
                    guard ms >= 0 else {
                        return [
                            .value(false),
                            .value(
                                .string(
                                    LuaString(
                                        "store:advance(ms): ms must be 0 or more (got \(ms)); the clock only moves forward"
                                    ))),
                        ]
                    }
                    s.advance(by: Int(ms))
                    return [.value(true)]
                }
            ),
            // The explorer's (Lua/explore.lua): steps that assert nothing, and what they led to.
            (
                "explore",
                .function { args in
                    try store(args).startExploring(keepStates: (try args.value(2)).isTruthy)
                    return []
                }
            ),
            (
                "exploreSend",
                .function { args in
                    let s = try store(args)
                    let action = try args.value(2, path: "action")
                    if let refusal = s.exploreSend(action) {
                        return [.value(false), .value(.string(LuaString(refusal)))]
                    }
                    return [.value(true)]
                }
            ),
            ("exploreTake", .function { args in [.value(try store(args).exploreTake())] }),
            // Guided exploration's new lines: counting starts (and what was seen is forgotten)
            // at each exploration; each take is the lines of plugin files run for the first time since.
            (
                "exploreLinesStart",
                .function { [weak host] _ in [.value(.boolean(host?.lua.startFreshLines() ?? false))] }
            ),
            (
                "exploreLinesTake",
                .function { [weak host] _ in [.value(.integer(Int64(host?.lua.takeFreshLines() ?? 0)))] }
            ),
            (
                "exploreNextDue",
                .function { args in [.value(try store(args).exploreNextDue.map { .integer(Int64($0)) } ?? .nil)] }
            ),
            (
                "exploreInFlight",
                .function { args in
                    [.value(.table(LuaTable(array: try store(args).exploreInFlight.map { .string(LuaString($0)) })))]
                }
            ),
            (
                "exploreSettle",
                .function { args in
                    let s = try store(args)
                    s.running { s.host.settle() }
                    return []
                }
            ),
            (
                "exploreStop",
                .function { args in
                    try store(args).exploreStop()
                    args.object(1, as: StoreHandle.self)?.owned = nil
                    return []
                }
            ),
            (
                "definition",
                .function { args in
                    let feature = try store(args).feature
                    if let f = feature as? LuaFeature { return [.ref(f.definition.table)] }
                    if let c = feature as? LuaComposite { return [.ref(c.definition.table)] }
                    return [.value(.nil)]
                }
            ),
            (
                "exploreDefaults",
                .function { _ in
                    var t = LuaTable()
                    t["seed"] = defaults.seed.map { .integer($0) } ?? .nil
                    t["runs"] = defaults.runs.map { .integer(Int64($0)) } ?? .nil
                    t["length"] = defaults.length.map { .integer(Int64($0)) } ?? .nil
                    t["steps"] = defaults.steps.map { .integer(Int64($0)) } ?? .nil
                    t["seconds"] = defaults.seconds.map { .number($0) } ?? .nil
                    t["guided"] = defaults.guided.map { .boolean($0) } ?? .nil
                    return [.value(.table(t))]
                }
            ),
            // What the explorer's budgets read: the wall clock in seconds, and the milliseconds
            // left before the test's own deadline stops it (nil: no deadline), so it stops first
            // and still prints what it found.
            // Under the debugger each is kept as read, and read again so when the file runs again.
            (
                "clock",
                .function { _ in
                    [.value(kept { .number(Double(DispatchTime.now().uptimeNanoseconds) / 1e9) })]
                }
            ),
            (
                "testTimeLeft",
                .function { [weak host] _ in [.value(kept { host?.lua.testTimeLeftMs.map { .integer($0) } ?? .nil })] }
            ),
            ("freshSeed", .function { _ in [.value(kept { .integer(Int64.random(in: 1...999_999_999)) })] }),
            // A value as the JSON `moonflow run` reads: the same writer, keys sorted.
            ("json", .function { args in [.value(.string(LuaString(try args.value(1).json())))] }),
            (
                "skipReceived",
                .function { args in
                    try store(args).skipReceived(); return []
                }
            ),
            (
                "skipInFlight",
                .function { args in
                    try store(args).skipInFlight(); return []
                }
            ),
            ("state", .function { args in [.value(try store(args).state)] }),
            ("strictState", .function { args in [.value(.boolean(try store(args).declaredFields != nil))] }),
            (
                "unknownField",
                .function { args in
                    let s = try store(args)
                    guard let fields = s.declaredFields, case .string(let key)? = try? args.value(2, path: "key") else {
                        return [.value(.nil)]
                    }
                    let name = key.description
                    if fields.contains(name) { return [.value(.nil)] }
                    return [
                        .value(
                            .string(
                                LuaString(
                                    "store.state has no field '\(name)' (\(SchemaType.fieldHint(name, fields: fields)))"
                                )))
                    ]
                }
            ),
            (
                "nearest",
                .function { args in
                    let key = (try? args.string(1, function: "nearest")) ?? ""
                    let known = (try? args.value(2, path: "names"))?.tableValue?.array.compactMap(\.stringValue) ?? []
                    return [
                        .value(
                            .string(
                                LuaString(
                                    SchemaType.fieldHint(key, fields: known).replacingOccurrences(
                                        of: "declared: ", with: "it has: "))))
                    ]
                }
            ),
            ("now", .function { args in [.value(.integer(Int64(try store(args).clock.now)))] }),
            (
                "logs",
                .function { args in
                    let logs = try store(args).log.logs.map { entry -> LuaValue in
                        var t = LuaTable()
                        t["message"] = .string(LuaString(entry.message))
                        if let location = entry.location { t["where"] = .string(LuaString(location)) }
                        return .table(t)
                    }
                    return [.value(.table(LuaTable(array: logs)))]
                }
            ),
        ]
        let coreTable = try lua.makeTable(core)
        let chunk = try lua.load(string: luaSource, name: "moonflow.test")
        let explorer = try lua.load(string: exploreSource, name: "moonflow.explore")
        let generators = try lua.load(string: generatorsSource, name: "moonflow.generators")
        let guide = try lua.load(string: guideSource, name: "moonflow.guide")
        let install = try lua.load(string: preloadSource, name: "moonflow.test")
        try lua.call(install, [.ref(chunk), .ref(coreTable), .ref(explorer), .ref(generators), .ref(guide)]) { _ in () }
    }

    /// What a store's userdata holds: the store, weakly. The store owns a feature, and so the
    /// spec's Lua state: held by a userdata of that state, state and store would keep each
    /// other alive after the spec ends. The spec's host keeps the store instead.
    private final class StoreHandle {
        weak var store: FeatureStore?
        /// The explorer's stores only: a strong reference, dropped when its run ends.
        var owned: FeatureStore?
        init(_ store: FeatureStore) { self.store = store }
    }

    /// The Lua side: argument checks, stubs, and raising failures at the spec's line.
    static let luaSource = String(decoding: PackageResources.moonflow_test_lua, as: UTF8.self)
    /// `T.explore`, `T.faults` and the shrinker (`Lua/explore.lua`), handed to the module.
    static let exploreSource = String(decoding: PackageResources.explore_lua, as: UTF8.self)
    /// `T.gen`'s generators and the seeded random source (`Lua/generators.lua`), handed to explore.lua.
    static let generatorsSource = String(decoding: PackageResources.generators_lua, as: UTF8.self)
    /// Guided exploration's corpus and mutations (`Lua/guide.lua`), handed to explore.lua.
    static let guideSource = String(decoding: PackageResources.guide_lua, as: UTF8.self)
    /// Registers the module in `package.preload` with `core` (`Lua/preload.lua`).
    static let preloadSource = String(decoding: PackageResources.preload_lua, as: UTF8.self)
}
