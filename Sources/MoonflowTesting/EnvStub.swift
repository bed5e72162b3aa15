import LuaKit
import MoonflowHost

/// What a Swift test store's feature reads through `env.now()`, `env.uuid()` and
/// `env.random(...)`, stubbed in the test (the Lua test store's `opts.env` and `opts.seed`).
///
///     let store = try TypedFeatureStore<InboxState, InboxAction>(
///         "inbox", env: EnvStub(seed: 7, now: { 1_767_225_600_000 }, uuid: { "draft-1" }))
///
/// What is not stubbed follows the store's virtual clock (`env.now()` from
/// 2026-01-01T00:00:00Z) and its seed (`env.uuid()`, `env.random`, `math.random`).
/// docs/testing.md, "Dependencies from Swift", shows it in a test.
public struct EnvStub: Sendable {
    /// The seed of the feature's random numbers (`math.random`, `env.random`, `env.uuid`);
    /// nil: the default every virtual-clock run starts from.
    public var seed: Int64?
    /// `env.now()`: milliseconds since 1970-01-01T00:00:00Z.
    public var now: (@Sendable () -> Int64)?
    /// `env.uuid()`: the id as the feature will see it.
    public var uuid: (@Sendable () -> String)?
    /// `env.random(...)`'s source: a number in [0, 1). `env.random()` returns it;
    /// `env.random(n)` and `env.random(m, n)` make an integer of it, as `math.random` does
    /// (1...n and m...n).
    public var random: (@Sendable () -> Double)?

    public init(
        seed: Int64? = nil, now: (@Sendable () -> Int64)? = nil, uuid: (@Sendable () -> String)? = nil,
        random: (@Sendable () -> Double)? = nil
    ) {
        self.seed = seed
        self.now = now
        self.uuid = uuid
        self.random = random
    }

    /// The Lua table of stubs `host` applies to every feature's `env` (nil: none stubbed).
    func install(on host: FeatureHost) throws {
        var stubs: [(String, LuaPush)] = []
        if let now {
            stubs.append(("now", .function { _ in [.value(.integer(now()))] }))
        }
        if let uuid {
            stubs.append(("uuid", .function { _ in [.value(.string(LuaString(uuid())))] }))
        }
        if let random {
            stubs.append(("random", .function { args in try Self.draw(random(), args) }))
        }
        guard !stubs.isEmpty else { return }
        host.envOverrides = try host.lua.makeTable(stubs)
    }

    /// `env.random(...)` from `x` in [0, 1): `()` x itself, `(n)` an integer in 1...n,
    /// `(m, n)` one in m...n; bounds as `math.random` takes them, or an error naming the call.
    private static func draw(_ x: Double, _ args: LuaSlots) throws -> [LuaPush] {
        guard x >= 0, x < 1 else {
            throw FeatureStore.Failure("EnvStub.random returned \(x): give a number in [0, 1)")
        }
        if args.count == 0 { return [.value(.number(x))] }
        let low: Int64, high: Int64
        if args.count == 1 {
            low = 1
            high = try args.integer(1)
        } else {
            low = try args.integer(1)
            high = try args.integer(2)
        }
        guard low <= high else {
            throw FeatureStore.Failure("env.random(\(low), \(high)): the interval is empty (give m <= n)")
        }
        // The width as an unsigned count: m...n may span the whole integer range.
        let width = UInt64(bitPattern: high &- low) &+ 1
        // (0: all 2^64 of them). x < 1, but its product may round up to the width: capped.
        let scaled = x * (width == 0 ? 0x1p64 : Double(width))
        let offset = min(scaled >= 0x1p64 ? UInt64.max : UInt64(scaled), width &- 1)
        return [.value(.integer(low &+ Int64(bitPattern: offset)))]
    }
}
