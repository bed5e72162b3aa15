/// `map`: each value transformed; a thrown error fails the stream.
@usableFromInline
struct Map<Input: Sendable, Output: Sendable>: Sendable {
    @usableFromInline
    let transform: @Sendable (Input) throws -> Output

    @inlinable
    init(transform: @escaping @Sendable (Input) throws -> Output) {
        self.transform = transform
    }

    @inlinable
    func observer(_ downstream: Observer<Output>, _ lifetime: Lifetime) -> Observer<Input> {
        let transform = self.transform
        return Observer { event in
            switch event {
            case .value(let value):
                do { downstream.send(value: try transform(value)) } catch { downstream.sendFailed(error) }
            case .failed(let error): downstream.sendFailed(error)
            case .completed: downstream.sendCompleted()
            case .interrupted: downstream.sendInterrupted()
            }
        }
    }
}

extension Producer {
    /// Transforms each value.
    ///
    /// ```swift
    /// Producer.from([1, 2, 3]).map { $0 * 10 }   // 10 20 30
    /// ```
    ///
    /// - Parameter transform: Applied to each value; if it throws, the stream fails with the error.
    /// - Returns: A producer of the transformed values.
    @inlinable
    public func map<NewValue: Sendable>(
        _ transform: @escaping @Sendable (Value) throws -> NewValue
    ) -> Producer<NewValue> {
        lift(Map(transform: transform).observer)
    }
}
