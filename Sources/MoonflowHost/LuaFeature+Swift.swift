import Foundation
import LuaKit
import MoonflowLua
import Streams

/// The Swift view of a running feature: send actions as values or `Encodable`s,
/// read the state as a `LuaValue` or decode it into a `Codable` view model, and
/// receive effects and errors, each also as an `AsyncSequence`.
///
///     struct CounterView: Decodable { let count: Int }
///     let counter = try host.load("counter")
///     counter.start()
///     try counter.send(["type": "increment"])
///     let view = try counter.decodeState(CounterView.self)
extension RunningFeature {
    /// Sends an action built from an `Encodable` value (it must encode to a table with `type`).
    public func send<A: Encodable>(encoding action: A) throws {
        try send(try LuaValueEncoder().encode(action))
    }

    /// The current state decoded into `T`.
    public func decodeState<T: Decodable>(_ type: T.Type) throws -> T {
        try LuaValueDecoder().decode(T.self, from: state)
    }

    /// The state after every reduced mutation (not the current one).
    public var stateChanges: Signal<LuaValue> {
        events.compactMap { if case .state(let s, let seq) = $0, seq > 0 { s } else { nil } }
    }

    /// Outward effects: those no internal handler took.
    public var outwardEffects: Signal<LuaValue> {
        events.compactMap { if case .effect(let e, _) = $0 { e } else { nil } }
    }

    /// Errors with their message and `file:line`.
    public var failures: Signal<FeatureFailure> {
        events.compactMap { if case .error(let m, let w) = $0 { FeatureFailure(message: m, location: w) } else { nil } }
    }

    /// State changes as an `AsyncSequence`.
    public var states: AsyncStream<LuaValue> { stateChanges.asyncStream }
    /// Outward effects as an `AsyncSequence`.
    public var effects: AsyncStream<LuaValue> { outwardEffects.asyncStream }
    /// Errors as an `AsyncSequence`.
    public var errors: AsyncStream<FeatureFailure> { failures.asyncStream }
}

/// An error a feature reported: the state is as it was before it.
public struct FeatureFailure: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String
    /// `file:line`, when known.
    public let location: String?
    public var description: String { location.map { "\($0): \(message)" } ?? message }
}

extension Signal {
    /// Values that `transform` keeps, as a new signal.
    func compactMap<U: Sendable>(_ transform: @escaping @Sendable (Value) -> U?) -> Signal<U> {
        let (output, input) = Signal<U>.pipe()
        _ = observe(Observer { event in
            switch event {
            case .value(let v): if let u = transform(v) { input.send(value: u) }
            case .failed(let e): input.sendFailed(e)
            case .completed: input.sendCompleted()
            case .interrupted: input.sendInterrupted()
            }
        })
        return output
    }

    /// The signal's values as an `AsyncStream` (buffered; ends when the signal does).
    var asyncStream: AsyncStream<Value> {
        AsyncStream { continuation in
            let disposable = observe(Observer { event in
                switch event {
                case .value(let v): continuation.yield(v)
                default: continuation.finish()
                }
            })
            continuation.onTermination = { _ in disposable?.dispose() }
        }
    }
}
