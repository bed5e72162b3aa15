extension Producer {
    /// A producer that sends one value and completes.
    ///
    /// ```swift
    /// Producer.just(42).start(value: { print($0) })   // 42
    /// ```
    ///
    /// - Parameter value: The value to send.
    /// - Returns: The producer.
    @inlinable
    public static func just(_ value: Value) -> Producer<Value> {
        Producer { observer, _ in
            observer.send(value: value)
            observer.sendCompleted()
        }
    }

    /// A producer that completes at once without values.
    ///
    /// - Returns: The producer.
    public static func empty() -> Producer<Value> {
        Producer { observer, _ in observer.sendCompleted() }
    }

    /// A producer that never sends anything.
    ///
    /// - Returns: The producer.
    public static func never() -> Producer<Value> {
        Producer { _, _ in }
    }

    /// A producer that fails at once with `error`.
    ///
    /// ```swift
    /// Producer<Int>.fail(TimeoutError())
    /// ```
    ///
    /// - Parameter error: The failure.
    /// - Returns: The producer.
    public static func fail(_ error: any Error) -> Producer<Value> {
        Producer { observer, _ in observer.sendFailed(error) }
    }

    /// A producer that sends every element of `sequence`, then completes; it stops early when
    /// the subscription ends.
    ///
    /// ```swift
    /// Producer.from(["a", "b"])   // a b, then completed
    /// ```
    ///
    /// - Parameter sequence: The values, iterated anew for each subscription.
    /// - Returns: The producer.
    @inlinable
    public static func from<S: Sequence & Sendable>(_ sequence: S) -> Producer<Value> where S.Element == Value {
        Producer { observer, lifetime in
            for value in sequence {
                if lifetime.hasEnded { return }
                observer.send(value: value)
            }
            observer.sendCompleted()
        }
    }
}
