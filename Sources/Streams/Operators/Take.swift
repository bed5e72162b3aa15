/// `take`: the first `count` values, then completion (and the source is torn down).
@usableFromInline
struct Take<Value: Sendable>: Sendable {
    @usableFromInline
    let count: Int

    @inlinable
    init(count: Int) {
        self.count = count
    }

    @inlinable
    func observer(_ downstream: Observer<Value>, _ lifetime: Lifetime) -> Observer<Value> {
        let limit = count
        let taken = Locked(0)
        return Observer { event in
            guard case .value = event else { return downstream.send(event) }
            // Count before sending, so a re-entrant value sent from the observer is counted too.
            let position = taken.withLock { taken in
                taken += 1
                return taken
            }
            guard position <= limit else { return }
            downstream.send(event)
            if position == limit { downstream.sendCompleted() }
        }
    }
}

extension Producer {
    /// Takes the first `count` values, then completes.
    ///
    /// ```swift
    /// Producer.interval(100, on: scheduler).take(3)   // 0 1 2, completed at 300
    /// ```
    ///
    /// - Parameter count: How many values; zero or less completes at once without starting
    ///   this producer.
    /// - Returns: The shortened producer.
    @inlinable
    public func take(_ count: Int) -> Producer<Value> {
        guard count > 0 else { return .empty() }
        return lift(Take(count: count).observer)
    }
}
