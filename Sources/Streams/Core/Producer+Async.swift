extension Producer {
    /// A producer that runs `operation` in a new `Task` for each subscription and sends its
    /// result, then completes; a thrown error fails it. Disposing the subscription cancels the
    /// task.
    ///
    /// ```swift
    /// let profile = Producer { try await api.profile(id) }
    /// ```
    ///
    /// - Parameter operation: The async work.
    public init(async operation: @escaping @Sendable () async throws -> Value) {
        self.init { observer, lifetime in
            let task = Task {
                do {
                    let value = try await operation()
                    observer.send(value: value)
                    observer.sendCompleted()
                } catch {
                    observer.sendFailed(error)
                }
            }
            lifetime.observeEnded { task.cancel() }
        }
    }

    /// The producer's values as an `AsyncSequence`: iterating starts a subscription, and ending
    /// the iteration early (break, cancellation) disposes it.
    ///
    /// A failure is thrown from the iteration; an interruption throws `CancellationError`.
    /// Values are buffered without limit until the iteration takes them.
    ///
    /// ```swift
    /// for try await state in store.states.values { render(state) }
    /// ```
    public var values: AsyncThrowingStream<Value, any Error> {
        AsyncThrowingStream { continuation in
            let subscription = start(
                Observer { event in
                    switch event {
                    case .value(let value): continuation.yield(value)
                    case .failed(let error): continuation.finish(throwing: error)
                    case .completed: continuation.finish()
                    case .interrupted: continuation.finish(throwing: CancellationError())
                    }
                })
            continuation.onTermination = { _ in subscription.dispose() }
        }
    }
}
