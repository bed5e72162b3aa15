import LuaKit
import MoonflowHost
import MoonflowLua

/// A `FeatureStore` in the feature's generated Swift types (`moonflow types --swift PLUGIN`):
/// actions are sent as `Action` cases, the expected change is made to a `State`, and
/// mutations and effects are asserted as the generated enums. The semantics are
/// `FeatureStore`'s: exhaustive by default, on a virtual clock of its own.
///
///     let store = try TypedFeatureStore<CounterState, CounterAction>("counter")
///     try store.send(.increment(by: 9)) { $0.count = 9 }
///     try store.send(.incrementLater(ms: 50))
///     store.advance(by: 50)
///     try store.receive(CounterMutation.add(n: 1)) { $0.count = 10 }
///     try store.receiveEffect(CounterEffect.milestone(count: 10))
///     try store.finish()
///
/// A change is applied to the last asserted state decoded as `State`, and the result,
/// encoded back, must equal the feature's state exactly (a diff by path when it does not).
public final class TypedFeatureStore<State: Codable & Sendable, Action: Encodable & Sendable>: @unchecked Sendable {
    /// The store underneath, in `LuaValue`s (its clock, `skipReceived`, `log`, ...).
    public let store: FeatureStore

    /// Loads `plugin` on a host of its own, as `FeatureStore.init` does.
    public init(
        _ plugin: String, searchPaths: [String] = ["plugins"], services: [String: LuaService] = [:],
        state: State? = nil, exhaustive: Bool = true
    ) throws {
        store = try FeatureStore(
            plugin, searchPaths: searchPaths, services: services,
            state: try state.map { try LuaValueEncoder().encode($0) }, exhaustive: exhaustive)
    }

    /// Wraps a store already made.
    public init(_ store: FeatureStore) { self.store = store }

    /// The feature's state now, decoded.
    public var state: State {
        get throws { try decode(State.self, store.state, what: "the state") }
    }

    /// Sends `action` and asserts the state it led to; `change` makes the expected change.
    public func send(
        _ action: Action, file: StaticString = #filePath, line: UInt = #line,
        _ change: ((inout State) throws -> Void)? = nil
    ) throws {
        let value: LuaValue
        do { value = try LuaValueEncoder.actionFromEnumCase(action) } catch {
            throw FeatureStore.Failure("\(file):\(line): \(action) does not encode as an action: \(error)")
        }
        try store.send(value, file: file, line: line, change.map(typed))
    }

    /// Asserts the next mutation that arrived after a send (the first that matches, when the
    /// store is not exhaustive), compared as the generated `Mutation` enum.
    public func receive<Mutation: Decodable & Equatable>(
        _ mutation: Mutation, file: StaticString = #filePath, line: UInt = #line,
        _ change: ((inout State) throws -> Void)? = nil
    ) throws {
        let match = try pick(
            mutation, from: store.unasserted().mutations, file: file, line: line,
            what: (
                "receive", "the next mutation does not match", "no received mutation matches", "received",
                "none arrived"
            ))
        try store.receive(match, file: file, line: line, change.map(typed))
    }

    /// Asserts the next outward effect, compared as the generated `Effect` enum.
    public func receiveEffect<Effect: Decodable & Equatable>(
        _ effect: Effect, from child: String? = nil,
        file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let match = try pick(
            effect, from: store.unasserted().effects, file: file, line: line,
            what: (
                "receiveEffect", "the next outward effect does not match", "no outward effect matches", "went out:",
                "none went out"
            ))
        try store.receiveEffect(match, from: child, file: file, line: line)
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
    public func receiveError(_ text: String, file: StaticString = #filePath, line: UInt = #line) throws {
        try store.receiveError(text, file: file, line: line)
    }

    /// Moves the store's virtual clock on by `ms`, running what falls due.
    public func advance(by ms: Int) { store.advance(by: ms) }

    /// Fails on anything not asserted, as `FeatureStore.finish` does; then stops the feature.
    public func finish(file: StaticString = #filePath, line: UInt = #line) throws {
        try store.finish(file: file, line: line)
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
