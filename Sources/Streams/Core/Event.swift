/// One signal from a stream: a value, or the terminal event that ends the stream.
///
/// A stream follows the grammar `value* (failed | completed | interrupted)?`: any number of
/// values, then at most one terminal event, after which nothing else arrives.
/// Errors are untyped because Lua errors are dynamic.
///
/// ```swift
/// let events: [Event<Int>] = [.value(1), .value(2), .completed]
/// ```
public enum Event<Value: Sendable>: Sendable {
    /// A value; more events may follow.
    case value(Value)
    /// The stream ended with an error.
    case failed(any Error)
    /// The stream ended normally.
    case completed
    /// The stream was cut off before it could finish (its source was torn down).
    case interrupted

    /// Whether this event ends the stream (`failed`, `completed` or `interrupted`).
    @inlinable
    public var isTerminating: Bool {
        if case .value = self { return false }
        return true
    }

    /// The carried value, or `nil` for terminal events.
    @inlinable
    public var value: Value? {
        if case .value(let value) = self { return value }
        return nil
    }

    /// The carried error for `failed`, otherwise `nil`.
    @inlinable
    public var error: (any Error)? {
        if case .failed(let error) = self { return error }
        return nil
    }

    /// Transforms the carried value and keeps terminal events as they are.
    ///
    /// ```swift
    /// Event.value(2).map { $0 * 10 }   // .value(20)
    /// ```
    ///
    /// - Parameter transform: Applied to a `value` event's payload.
    /// - Returns: The event with its value transformed.
    @inlinable
    public func map<NewValue: Sendable>(_ transform: (Value) throws -> NewValue) rethrows -> Event<NewValue> {
        switch self {
        case .value(let value): return .value(try transform(value))
        case .failed(let error): return .failed(error)
        case .completed: return .completed
        case .interrupted: return .interrupted
        }
    }
}

extension Event: Equatable where Value: Equatable {
    /// Compares two events; two `failed` events are equal when their errors have the same type
    /// and the same `String(describing:)` text, which is what tests of dynamic errors can rely on.
    public static func == (lhs: Event, rhs: Event) -> Bool {
        switch (lhs, rhs) {
        case let (.value(left), .value(right)): return left == right
        case let (.failed(left), .failed(right)):
            return type(of: left) == type(of: right) && String(describing: left) == String(describing: right)
        case (.completed, .completed), (.interrupted, .interrupted): return true
        default: return false
        }
    }
}

extension Event: CustomStringConvertible {
    public var description: String {
        switch self {
        case .value(let value): return "value(\(value))"
        case .failed(let error): return "failed(\(error))"
        case .completed: return "completed"
        case .interrupted: return "interrupted"
        }
    }
}
