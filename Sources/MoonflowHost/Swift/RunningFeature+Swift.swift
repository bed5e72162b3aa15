import Foundation
import LuaKit
import MoonflowLua
import Streams

/// The Swift view of a running feature: send actions as values or `Encodable`s,
/// read the state as a `LuaValue` or decode it into a `Codable` view model, and
/// receive states, effects and errors as `AsyncSequence`s or signals.
///
///     struct CounterView: Decodable { let count: Int }
///     let counter = try host.load("counter")
///     counter.start()
///     try counter.send(["type": "increment"])
///     for await state in counter.states { ... }      // the current state, then every change
///
/// **Lifetimes:** every stream ends when the feature is disposed (`dispose()`)
/// or released; a `for await` loop over one stops observing when its task is
/// cancelled, and reading a stream property again attaches nothing that stays.
extension RunningFeature {
    /// Sends an action built from an `Encodable` value (it must encode to a table with `type`).
    package func send<A: Encodable>(encoding action: A) throws {
        let value: LuaValue
        do { value = try LuaValueEncoder().encode(action) } catch { throw FeatureError(refused: error) }
        try send(value)
    }

    /// Sends an enum case as an action: `.add(sku: "A", quantity: 2)` becomes
    /// `{ type = "add", sku = "A", quantity = 2 }`, and a case without values
    /// `{ type = "reset" }` (Swift's synthesized `Encodable` writes `{"add": {...}}`).
    public func send<A: Encodable>(case action: A) throws {
        let value: LuaValue
        do { value = try LuaValueEncoder.actionFromEnumCase(action) } catch { throw FeatureError(refused: error) }
        try send(value)
    }

    /// The current state decoded into `T`.
    public func decodeState<T: Decodable>(_ type: T.Type) throws -> T {
        try LuaValueDecoder().decode(T.self, from: state)
    }

    /// The state after every reduced mutation (not the current one). Made once per feature.
    package var stateChanges: Signal<LuaValue> {
        outlet.derived("stateChanges") {
            signal(kinds: .state) { event, _ in if case .state(let s, let seq) = event, seq > 0 { s } else { nil } }
        }
    }

    /// Outward effects: those no internal handler took. Made once per feature.
    package var outwardEffects: Signal<LuaValue> {
        outlet.derived("outwardEffects") {
            signal(kinds: .effect) { event, _ in if case .effect(let e, _) = event { e } else { nil } }
        }
    }

    /// Errors with their stage, action, `file:line`, traceback and Swift error. Made once per feature.
    package var failures: Signal<FeatureError> {
        outlet.derived("failures") {
            signal(kinds: .error) { event, feature in
                guard case .error(let message, let location) = event else { return nil }
                return feature?.eventError ?? FeatureError(stage: .handle, message: message, location: location)
            }
        }
    }

    /// The current state, then the state after every reduced mutation (a change
    /// that lands while the stream starts may show twice, never not at all).
    public var states: AsyncStream<LuaValue> {
        let current = state
        return stream(first: current, kinds: .state) { event, _ in
            if case .state(let s, let seq) = event, seq > 0 { s } else { nil }
        }
    }

    /// Outward effects as an `AsyncSequence`.
    public var effects: AsyncStream<LuaValue> {
        stream(kinds: .effect) { event, _ in if case .effect(let e, _) = event { e } else { nil } }
    }

    /// Errors as an `AsyncSequence` of `FeatureError`.
    public var errors: AsyncStream<FeatureError> {
        stream(kinds: .error) { event, feature in
            guard case .error(let message, let location) = event else { return nil }
            return feature?.eventError ?? FeatureError(stage: .handle, message: message, location: location)
        }
    }

    /// Waits (real time) until nothing is queued, running or in flight, Swift
    /// services included: for hosts on the real clock (on the virtual clock, use
    /// `host.runUntilIdle()`). It returns at once for a disposed feature.
    ///
    ///     try feature.send(["type": "load"])
    ///     try await feature.idle()          // the load's service answered and was reduced
    ///
    /// - Throws: `CancellationError` as soon as the awaiting task is cancelled;
    ///   `FeatureError` of stage `.service` when awaited inside a Swift service call on this
    ///   feature's host (it would wait for that call, its own caller, for ever: send an action
    ///   instead), and the stuck error when the host's Lua state is stuck (`isStuck`: queued work
    ///   never runs).
    public func idle() async throws {
        if let reentrant = reentrantIdle() { throw reentrant }
        let bridge = (self as? any BridgedFeature)?.bridge
        while !(isIdle && (bridge?.pending.inFlight ?? 0) == 0) && !isDisposed {
            if bridge?.lua.isStuck == true { throw FeatureError.stuck(feature: name) }
            try await Task.sleep(nanoseconds: 500_000)
        }
    }

    /// A stream of the events `transform` keeps, starting with `first`; it ends
    /// when the feature does, and stops observing when its consumer goes away.
    private func stream<T: Sendable>(
        first: T? = nil, kinds: FeatureEvent.Kinds,
        _ transform: @escaping @Sendable (FeatureEvent, (any RunningFeature)?) -> T?
    ) -> AsyncStream<T> {
        AsyncStream { continuation in
            if let first { continuation.yield(first) }
            let token = outlet.add(
                kinds: kinds,
                { [weak self] event in
                    if let value = transform(event, self) { continuation.yield(value) }
                }, onFinish: { continuation.finish() })
            continuation.onTermination = { _ in token.dispose() }
        }
    }
}

extension RunningFeature {
    /// A signal of the events of `kinds` that `transform` keeps; it completes when the feature ends.
    fileprivate func signal<T: Sendable>(
        kinds: FeatureEvent.Kinds,
        _ transform: @escaping @Sendable (FeatureEvent, (any RunningFeature)?) -> T?
    ) -> Signal<T> {
        let (output, input) = Signal<T>.pipe()
        outlet.add(
            kinds: kinds,
            { [weak self] event in
                if let value = transform(event, self) { input.send(value: value) }
            }, onFinish: { input.sendCompleted() })
        return output
    }
}
