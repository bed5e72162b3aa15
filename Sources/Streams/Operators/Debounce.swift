/// `debounce`: a value is forwarded only once `dueMs` have passed without a newer one
/// (RxSwift semantics). Completion first flushes the pending value; a failure drops it.
enum Debounce {
    private struct State<Value> {
        var pending: Value?
        var generation = 0
    }

    static func run<Value: Sendable>(
        _ source: Producer<Value>, _ dueMs: Int, _ scheduler: Scheduler,
        _ observer: Observer<Value>, _ lifetime: Lifetime
    ) {
        let downstream = Serializer(observer)
        let state = Locked(State<Value>())
        let timer = SerialDisposable()
        lifetime += timer
        source.run(
            Observer { event in
                switch event {
                case .value(let value):
                    let generation = state.withLock { state in
                        state.pending = value
                        state.generation += 1
                        return state.generation
                    }
                    timer.inner = scheduler.schedule(after: dueMs) {
                        let due: Value? = state.withLock { state in
                            guard state.generation == generation else { return nil }
                            defer { state.pending = nil }
                            return state.pending
                        }
                        if let due { downstream.send(value: due) }
                    }
                case .completed:
                    let pending: Value? = state.withLock { state in
                        state.generation += 1
                        defer { state.pending = nil }
                        return state.pending
                    }
                    if let pending { downstream.send(value: pending) }
                    downstream.sendCompleted()
                case .failed, .interrupted:
                    state.withLock { state in
                        state.generation += 1
                        state.pending = nil
                    }
                    downstream.send(event)
                }
            }, in: lifetime)
    }
}

extension Producer {
    /// Forwards a value only after `dueMs` milliseconds pass without a newer value.
    ///
    /// ```swift
    /// queryText.debounce(300, on: scheduler)   // only the text the user paused on
    /// ```
    ///
    /// - Parameters:
    ///   - dueMs: The quiet time required.
    ///   - scheduler: Measures the time and delivers the values.
    /// - Returns: The debounced producer; on completion the pending value is sent at once.
    public func debounce(_ dueMs: Int, on scheduler: Scheduler) -> Producer<Value> {
        Producer { observer, lifetime in Debounce.run(self, dueMs, scheduler, observer, lifetime) }
    }
}
