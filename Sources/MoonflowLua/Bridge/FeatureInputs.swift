import Foundation
import LuaKit
import Streams

/// Time and random numbers as a feature's inputs: what the plain `os.time()`, `os.date(fmt)`,
/// `os.clock()` and `math.random` give a feature host's plugins, and `env.now()`,
/// `env.uuid()` and `env.random()` (dispatch.lua's `inputs`, which this starts).
///
///     try FeatureInputs.start(bridge, virtual: true, seed: 0, installGlobals: true)
///     // os.time() is 1767225600 (2026-01-01T00:00:00Z) plus the clock's seconds
///
/// - **Virtual clock:** time follows the clock from `epoch` (`os.time()` ten virtual minutes
///   in is 600 s later; `os.clock()` is the clock's seconds; `env.now()` its ms from the
///   epoch), and Lua's generator is seeded with the run's seed, so every run draws the same.
/// - **Real clock:** time is read live; under `--record` each value read goes to `record`
///   (`time`, `clock`, `now`) and the seed (drawn fresh unless given) is recorded once, so a
///   replay draws the same random numbers.
/// - **Replay:** `feed` hands back each recorded value of a kind in order, then the virtual
///   clock's.
///
/// `os.time(table)` and `os.date(fmt, t)` with an explicit time are Lua's own. `moonflow exec`
/// starts none of this: its `os` and `math` stay Lua's.
package enum FeatureInputs {
    /// Where the virtual clock's time starts: 2026-01-01T00:00:00Z, in seconds since 1970.
    package static let epoch: Int64 = 1_767_225_600
    /// The seed of a virtual-clock run that names none (`--seed`, a test store's `seed`).
    package static let defaultSeed: Int64 = 0

    /// A seed for a real-clock run: drawn from the system's generator.
    package static func freshSeed() -> Int64 { Int64.random(in: 0...Int64(Int32.max)) }

    /// Starts (or starts again) the inputs of the Lua state behind `bridge`: the clock they
    /// follow, the seed, the taps. With `installGlobals` the state's own `os.time`, `os.date`,
    /// `os.clock` and `math.randomseed` become the controlled ones (a trusted host whose plugins
    /// share its globals); isolated plugins get them through `library`.
    package static func start(
        _ bridge: LuaBridge, virtual: Bool, seed: Int64, installGlobals: Bool,
        record: (@Sendable (String, LuaValue) -> Void)? = nil, feed: (@Sendable (String) -> LuaValue?)? = nil
    ) throws {
        let lua = bridge.lua
        let scheduler = bridge.scheduler
        let start = try lua.rawGet(bridge.dispatch.inputs, "start") { try $0.ref(1) }
        // A host whose clock is switched per test store (a spec's): its own code around the
        // stores (a spec's busy wait on `os.clock()`) reads the live clock; a store's, its clock.
        let clockMs: LuaPush = .function { _ in
            if let router = scheduler as? SwitchableScheduler, !router.isSwitched { return [.value(.nil)] }
            return [.value(.integer(Int64(scheduler.now)))]
        }
        let wallMs: LuaPush = .function { _ in [.value(.integer(Int64(Date().timeIntervalSince1970 * 1000)))] }
        let recorder: LuaPush =
            record.map { record in
                .function { args in
                    record(try args.string(1, function: "record"), try args.value(2))
                    return []
                }
            } ?? .value(.nil)
        let feeder: LuaPush =
            feed.map { feed in
                .function { args in [.value(feed(try args.string(1, function: "feed")) ?? .nil)] }
            } ?? .value(.nil)
        let globals: LuaPush = installGlobals ? .ref(try lua.ref(global: "_G")) : .value(.nil)
        _ = try lua.call(
            start, [.value(.boolean(virtual)), .value(.integer(seed)), clockMs, wallMs, recorder, feeder, globals])
    }

    /// Seeds the generator again (a test store of its own seed, on a shared state).
    package static func reseed(_ bridge: LuaBridge, seed: Int64) throws {
        let reseed = try bridge.lua.rawGet(bridge.dispatch.inputs, "reseed") { try $0.ref(1) }
        _ = try bridge.lua.call(reseed, [.value(.integer(seed))])
    }
}
