/// `withLatestFrom`: each source value combined with the latest value of another producer;
/// source values arriving before the other has sent anything are dropped.
///
/// The other producer is started first, as its own subscription, so a value it sends
/// synchronously is already known to the source's first value. Its completion changes nothing;
/// its failure fails the result.
enum WithLatestFrom {
    static func run<Value: Sendable, Other: Sendable, Output: Sendable>(
        _ source: Producer<Value>, _ other: Producer<Other>,
        _ combine: @escaping @Sendable (Value, Other) throws -> Output,
        _ observer: Observer<Output>, _ lifetime: Lifetime
    ) {
        let downstream = Serializer(observer)
        let latest = Locked<Other?>(nil)
        lifetime += other.start(
            Observer { event in
                switch event {
                case .value(let value): latest.withLock { $0 = value }
                case .failed(let error): downstream.sendFailed(error)
                case .interrupted: downstream.sendInterrupted()
                case .completed: break
                }
            })
        source.run(
            Observer { event in
                switch event {
                case .value(let value):
                    guard let other = latest.withLock({ $0 }) else { return }
                    do { downstream.send(value: try combine(value, other)) } catch { downstream.sendFailed(error) }
                case .failed(let error): downstream.sendFailed(error)
                case .completed: downstream.sendCompleted()
                case .interrupted: downstream.sendInterrupted()
                }
            }, in: lifetime)
    }
}

extension Producer {
    /// Combines each value with the latest value of `other`.
    ///
    /// ```swift
    /// actions.withLatestFrom(state.producer) { action, state in (action, state) }
    /// ```
    ///
    /// - Parameters:
    ///   - other: Supplies the latest value; started before this producer.
    ///   - combine: Makes the output; if it throws, the result fails.
    /// - Returns: A producer of combined values; values before `other`'s first are dropped.
    public func withLatestFrom<Other: Sendable, Output: Sendable>(
        _ other: Producer<Other>, _ combine: @escaping @Sendable (Value, Other) throws -> Output
    ) -> Producer<Output> {
        Producer<Output> { observer, lifetime in WithLatestFrom.run(self, other, combine, observer, lifetime) }
    }

    /// Replaces each value with the latest value of `other`.
    ///
    /// - Parameter other: Supplies the latest value; started before this producer.
    /// - Returns: A producer of `other`'s latest value, once per value of this producer.
    public func withLatestFrom<Other: Sendable>(_ other: Producer<Other>) -> Producer<Other> {
        withLatestFrom(other) { _, latest in latest }
    }
}
