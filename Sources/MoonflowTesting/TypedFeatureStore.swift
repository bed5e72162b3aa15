import LuaKit
import MoonflowHost
import MoonflowHostTools
import MoonflowLua

/// The Swift test store, in the feature's generated Swift types (`moonflow types --swift
/// PLUGIN`): actions are sent as `Action` cases, the expected change is made to a `State`,
/// and mutations and effects are asserted as the generated enums. The semantics are
/// `FeatureStore`'s: exhaustive by default, on a virtual clock of its own.
///
///     let store = try TypedFeatureStore<CounterState, CounterAction>("counter")
///     try await store.send(.increment(by: 9)) { $0.count = 9 }
///     try await store.send(.incrementLater(ms: 50))
///     await store.advance(by: 50)
///     try await store.receive(CounterMutation.add(n: 1)) { $0.count = 10 }
///     try await store.receiveEffect(CounterEffect.milestone(count: 10))
///     try await store.finish()
///
/// A change is applied to the last asserted state decoded as `State`, and the result,
/// encoded back, must equal the feature's state exactly (a diff by path when it does not).
///
/// Its steps are `async`: while a Swift service the feature called is in flight, a step
/// suspends (it holds no thread) and goes on when the service answers, so any number of
/// stores run in parallel on the cooperative pool the services share (Swift Testing's
/// default). A step runs on the caller's executor (the main actor in a `@MainActor` test);
/// use a store from one task at a time. Failures are thrown as `FeatureStore.Failure`,
/// whose message starts with the test's `file:line`.
public final class TypedFeatureStore<State: Codable & Sendable, Action: Encodable & Sendable>: @unchecked Sendable {
    /// The store underneath, in `LuaValue`s (its clock, `log`, `skipInFlight`, ...). Its own
    /// `send`, `receive`, `advance` and `finish` block their thread while services run: in an
    /// async test, use this store's.
    public let store: FeatureStore

    /// How long a step waits for the Swift services in flight before it gives up and fails
    /// (a service that never answers fails the test instead of hanging it).
    public var timeout: Duration = .seconds(30)

    /// Loads `plugin` on a host of its own, as `FeatureStore.init` does, with `services`
    /// stubbed in Swift (`.stub("products") { (page: Int) async throws -> [Product] in ... }`)
    /// and `env.now()`, `env.uuid()`, `env.random(...)` and the seed by `env` (`EnvStub`).
    public init(
        _ plugin: String, searchPaths: [String] = ["plugins"], services: [ServiceStub] = [],
        state: State? = nil, exhaustive: Bool = true, env: EnvStub = EnvStub()
    ) throws {
        store = try FeatureStore(
            plugin, searchPaths: searchPaths, services: services,
            state: try state.map { try LuaValueEncoder().encode($0) }, exhaustive: exhaustive, env: env)
    }

    /// Wraps a store already made.
    public init(_ store: FeatureStore) { self.store = store }

    /// The feature's state now, decoded.
    public var state: State {
        get throws { try decode(State.self, store.state, what: "the state") }
    }

    /// Sends `action` and asserts the state it led to; `change` makes the expected change.
    /// What the action produced without the clock moving is covered by the send; what
    /// services and timers bring later is asserted with `receive`.
    nonisolated(nonsending) public func send(
        _ action: Action, file: StaticString = #filePath, line: UInt = #line,
        _ change: ((inout State) throws -> Void)? = nil
    ) async throws {
        let value: LuaValue
        do { value = try LuaValueEncoder.actionFromEnumCase(action) } catch {
            throw FeatureStore.Failure("\(file):\(line): \(action) does not encode as an action: \(error)")
        }
        try await store.step(settling: false, timeout: timeout) {
            try store.send(value, file: file, line: line, change.map(typed))
        }
    }

    /// Asserts the next mutation that arrived after a send (the first that matches, when the
    /// store is not exhaustive), compared as the generated `Mutation` enum. When none has
    /// arrived yet, it waits (suspended) for the services in flight to answer.
    nonisolated(nonsending) public func receive<Mutation: Decodable & Equatable>(
        _ mutation: Mutation, file: StaticString = #filePath, line: UInt = #line,
        _ change: ((inout State) throws -> Void)? = nil
    ) async throws {
        try await store.step(settling: waitsToPick, timeout: timeout) {
            let match = try pick(
                mutation, from: store.unasserted().mutations, file: file, line: line,
                what: (
                    "receive", "the next mutation does not match", "no received mutation matches", "received",
                    "none arrived"
                ))
            try store.receive(match, file: file, line: line, change.map(typed))
        }
    }

    /// Asserts the next outward effect, compared as the generated `Effect` enum; given `child`,
    /// the child of an `mf.compose` it came from.
    nonisolated(nonsending) public func receiveEffect<Effect: Decodable & Equatable>(
        _ effect: Effect, from child: String? = nil,
        file: StaticString = #filePath, line: UInt = #line
    ) async throws {
        try await store.step(settling: waitsToPick, timeout: timeout) {
            let match = try pick(
                effect, from: store.unasserted().effects, file: file, line: line,
                what: (
                    "receiveEffect", "the next outward effect does not match", "no outward effect matches",
                    "went out:", "none went out"
                ))
            try store.receiveEffect(match, from: child, file: file, line: line)
        }
    }

    /// Whether a typed `receive` waits for services before picking: when no mutation or no
    /// outward effect has arrived yet (as the blocking `unasserted()` would).
    private var waitsToPick: Bool {
        let counts = store.unassertedCounts
        return counts.mutations == 0 || counts.effects == 0
    }

    /// What arrived that decodes equal to `expected`: the next one, or (not exhaustive) the first
    /// that does; else a failure at the test's line naming both.
    private func pick<T: Decodable & Equatable>(
        _ expected: T, from arrived: [LuaValue], file: StaticString, line: UInt,
        what: (call: String, next: String, noMatch: String, seen: String, none: String)
    ) throws -> LuaValue {
        let candidates = store.exhaustive ? Array(arrived.prefix(1)) : arrived
        if let match = candidates.first(where: { (try? LuaValueDecoder().decode(T.self, from: $0)) == expected }) {
            return match
        }
        let shown =
            candidates.isEmpty ? what.none : "\(what.seen) " + candidates.map { "\($0)" }.joined(separator: ", ")
        let verdict = store.exhaustive ? what.next : what.noMatch
        throw FeatureStore.Failure("\(file):\(line): \(what.call)(\(expected)): \(verdict); \(shown)")
    }

    /// Asserts the next error the feature reported: its message must contain `text`.
    nonisolated(nonsending) public func receiveError(
        _ text: String, file: StaticString = #filePath, line: UInt = #line
    ) async throws {
        try await store.step(settling: store.unassertedCounts.errors == 0, timeout: timeout) {
            try store.receiveError(text, file: file, line: line)
        }
    }

    /// Moves the store's virtual clock on by `ms`, running what falls due and waiting
    /// (suspended) for the services that calls on the way.
    nonisolated(nonsending) public func advance(by ms: Int) async {
        await store.advanced(by: ms, timeout: timeout)
    }

    /// Forgets the mutations and outward effects not asserted yet, once the services in
    /// flight have answered; the last asserted state becomes the current one.
    nonisolated(nonsending) public func skipReceived() async {
        await store.step(settling: true, timeout: timeout) { store.skipReceived() }
    }

    /// Fails on anything not asserted (mutations, outward effects, errors, work in flight,
    /// each naming the action that started it) once the services in flight have answered,
    /// as `FeatureStore.finish` does; then stops the feature.
    nonisolated(nonsending) public func finish(file: StaticString = #filePath, line: UInt = #line) async throws {
        try await store.step(settling: true, timeout: timeout) { try store.finish(file: file, line: line) }
    }

    /// A typed change as the store's: decode, change, encode back.
    private func typed(_ change: @escaping (inout State) throws -> Void) -> (inout LuaValue) throws -> Void {
        { [self] value in
            var state = try decode(State.self, value, what: "the last asserted state")
            try change(&state)
            value = try LuaValueEncoder().encode(state)
        }
    }

    private func decode<T: Decodable>(_ type: T.Type, _ value: LuaValue, what: String) throws -> T {
        do { return try LuaValueDecoder().decode(type, from: value) } catch {
            throw FeatureStore.Failure(
                "\(what) does not decode into \(T.self): \(error); a type generated from the plugin (`moonflow types --swift`) matches it"
            )
        }
    }
}
