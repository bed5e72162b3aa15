/// `scan`: a running accumulation, emitted after each value (the seed itself is not emitted).
///
/// The accumulator runs under the operator's lock so that sources sending from several threads
/// still fold one value at a time; it must not synchronously feed the same `scan` again.
@usableFromInline
struct Scan<Value: Sendable, State: Sendable>: Sendable {
    @usableFromInline
    let seed: State
    @usableFromInline
    let next: @Sendable (State, Value) throws -> State

    @inlinable
    init(seed: State, next: @escaping @Sendable (State, Value) throws -> State) {
        self.seed = seed
        self.next = next
    }

    @inlinable
    func observer(_ downstream: Observer<State>, _ lifetime: Lifetime) -> Observer<Value> {
        let next = self.next
        let state = Locked(seed)
        return Observer { event in
            switch event {
            case .value(let value):
                let result: Result<State, any Error> = state.withLock { state in
                    do {
                        state = try next(state, value)
                        return .success(state)
                    } catch {
                        return .failure(error)
                    }
                }
                switch result {
                case .success(let state): downstream.send(value: state)
                case .failure(let error): downstream.sendFailed(error)
                }
            case .failed(let error): downstream.sendFailed(error)
            case .completed: downstream.sendCompleted()
            case .interrupted: downstream.sendInterrupted()
            }
        }
    }
}

extension Producer {
    /// Folds the values into a running state and emits the state after each value.
    ///
    /// ```swift
    /// Producer.from([1, 2, 3]).scan(0, +)   // 1 3 6 (the seed 0 is not emitted)
    /// ```
    ///
    /// - Parameters:
    ///   - seed: The state before the first value.
    ///   - next: Combines the state and a value into the next state; if it throws, the stream fails.
    /// - Returns: A producer of the successive states.
    @inlinable
    public func scan<State: Sendable>(
        _ seed: State, _ next: @escaping @Sendable (State, Value) throws -> State
    ) -> Producer<State> {
        lift(Scan(seed: seed, next: next).observer)
    }
}
