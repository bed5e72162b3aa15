/// `filter`: only the values that pass a predicate; a thrown error fails the stream.
@usableFromInline
struct Filter<Value: Sendable>: Sendable {
    @usableFromInline
    let isIncluded: @Sendable (Value) throws -> Bool

    @inlinable
    init(isIncluded: @escaping @Sendable (Value) throws -> Bool) {
        self.isIncluded = isIncluded
    }

    @inlinable
    func observer(_ downstream: Observer<Value>, _ lifetime: Lifetime) -> Observer<Value> {
        let isIncluded = self.isIncluded
        return Observer { event in
            guard case .value(let value) = event else { return downstream.send(event) }
            do {
                if try isIncluded(value) { downstream.send(event) }
            } catch {
                downstream.sendFailed(error)
            }
        }
    }
}

extension Producer {
    /// Keeps only the values for which `isIncluded` returns true.
    ///
    /// ```swift
    /// Producer.from(1...6).filter { $0.isMultiple(of: 2) }   // 2 4 6
    /// ```
    ///
    /// - Parameter isIncluded: Decides for each value; if it throws, the stream fails.
    /// - Returns: A producer of the values that passed.
    @inlinable
    public func filter(_ isIncluded: @escaping @Sendable (Value) throws -> Bool) -> Producer<Value> {
        lift(Filter(isIncluded: isIncluded).observer)
    }
}
