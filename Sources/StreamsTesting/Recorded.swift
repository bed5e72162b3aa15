import Streams

/// An event together with the virtual time it happened at: the unit of marble tests.
///
/// ```swift
/// let expected: [Recorded<Int>] = [.value(210, 1), .value(220, 2), .completed(300)]
/// ```
public struct Recorded<Value: Sendable>: Sendable {
    /// The virtual time in milliseconds.
    public let time: Int
    /// What happened.
    public let event: Event<Value>

    /// Pairs an event with its time.
    ///
    /// - Parameters:
    ///   - time: The virtual time.
    ///   - event: The event.
    public init(time: Int, event: Event<Value>) {
        self.time = time
        self.event = event
    }

    /// A value at `time`.
    ///
    /// - Parameters:
    ///   - time: The virtual time.
    ///   - value: The value.
    /// - Returns: The recorded event.
    public static func value(_ time: Int, _ value: Value) -> Recorded {
        Recorded(time: time, event: .value(value))
    }

    /// A completion at `time`.
    ///
    /// - Parameter time: The virtual time.
    /// - Returns: The recorded event.
    public static func completed(_ time: Int) -> Recorded {
        Recorded(time: time, event: .completed)
    }

    /// A failure at `time`.
    ///
    /// - Parameters:
    ///   - time: The virtual time.
    ///   - error: The failure.
    /// - Returns: The recorded event.
    public static func failed(_ time: Int, _ error: any Error) -> Recorded {
        Recorded(time: time, event: .failed(error))
    }

    /// An interruption at `time`.
    ///
    /// - Parameter time: The virtual time.
    /// - Returns: The recorded event.
    public static func interrupted(_ time: Int) -> Recorded {
        Recorded(time: time, event: .interrupted)
    }
}

extension Recorded: Equatable where Value: Equatable {}

extension Recorded: CustomStringConvertible {
    public var description: String {
        "\(event)@\(time)"
    }
}

/// When a subscription started and when it was disposed, in virtual time.
///
/// ```swift
/// XCTAssertEqual(source.subscriptions, [SubscriptionInterval(200, 450)])
/// ```
public struct SubscriptionInterval: Sendable, Hashable, CustomStringConvertible {
    /// The time of `start`.
    public let subscribed: Int
    /// The time the subscription ended, or `Int.max` while it is alive.
    public let disposed: Int

    /// Creates an interval.
    ///
    /// - Parameters:
    ///   - subscribed: The time of `start`.
    ///   - disposed: The time it ended; `Int.max` (the default) means still alive.
    public init(_ subscribed: Int, _ disposed: Int = .max) {
        self.subscribed = subscribed
        self.disposed = disposed
    }

    public var description: String {
        disposed == .max ? "(\(subscribed), alive)" : "(\(subscribed), \(disposed))"
    }
}
