/// `distinctUntilChanged`: drops a value equivalent to the one before it.
@usableFromInline
struct DistinctUntilChanged<Value: Sendable>: Sendable {
    @usableFromInline
    let isEquivalent: @Sendable (Value, Value) throws -> Bool

    @inlinable
    init(isEquivalent: @escaping @Sendable (Value, Value) throws -> Bool) {
        self.isEquivalent = isEquivalent
    }

    @inlinable
    func observer(_ downstream: Observer<Value>, _ lifetime: Lifetime) -> Observer<Value> {
        let isEquivalent = self.isEquivalent
        let previous = Locked<Value?>(nil)
        return Observer { event in
            guard case .value(let value) = event else { return downstream.send(event) }
            let isRepeat: Result<Bool, any Error> = previous.withLock { previous in
                defer { previous = value }
                guard let last = previous else { return .success(false) }
                return Result { try isEquivalent(last, value) }
            }
            switch isRepeat {
            case .success(false): downstream.send(event)
            case .success(true): break
            case .failure(let error): downstream.sendFailed(error)
            }
        }
    }
}

extension Producer {
    /// Drops each value that `isEquivalent` judges equal to the value before it.
    ///
    /// ```swift
    /// states.distinctUntilChanged { $0.items.count == $1.items.count }
    /// ```
    ///
    /// - Parameter isEquivalent: Compares the previous value with the new one; if it throws,
    ///   the result fails.
    /// - Returns: The producer without consecutive repeats.
    @inlinable
    public func distinctUntilChanged(
        _ isEquivalent: @escaping @Sendable (Value, Value) throws -> Bool
    ) -> Producer<Value> {
        lift(DistinctUntilChanged(isEquivalent: isEquivalent).observer)
    }
}

extension Producer where Value: Equatable {
    /// Drops each value equal to the value before it.
    ///
    /// ```swift
    /// Producer.from([1, 1, 2, 2, 1]).distinctUntilChanged()   // 1 2 1
    /// ```
    ///
    /// - Returns: The producer without consecutive repeats.
    @inlinable
    public func distinctUntilChanged() -> Producer<Value> {
        distinctUntilChanged(==)
    }
}
