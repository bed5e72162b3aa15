/// `timeout`: the source's events as long as each value (the first one counted from the
/// subscription) arrives within `dueMs` of the one before; otherwise the source is disposed
/// and the result fails with a `TimeoutError`, or goes on as `other` (RxSwift semantics).
///
/// The source runs as its own subscription so that it can be torn down when the deadline
/// passes while `other` runs on in the result's lifetime. A completion or failure that comes
/// first passes through and cancels the deadline.
enum Timeout {
    private struct State {
        var generation = 0
        var isTimedOut = false
        var isTerminated = false
    }

    static func run<Value: Sendable>(
        _ source: Producer<Value>, _ dueMs: Int, _ other: Producer<Value>?, _ scheduler: Scheduler,
        _ observer: Observer<Value>, _ lifetime: Lifetime
    ) {
        let downstream = Serializer(observer)
        let state = Locked(State())
        let timer = SerialDisposable()
        let upstream = SerialDisposable()
        lifetime += timer
        lifetime += upstream

        @Sendable func arm(_ generation: Int) {
            timer.inner = scheduler.schedule(after: dueMs) {
                let isDue = state.withLock { state in
                    guard state.generation == generation, !state.isTimedOut, !state.isTerminated else { return false }
                    state.isTimedOut = true
                    return true
                }
                guard isDue else { return }
                // Disposed for good: a subscription still on its way in is disposed on arrival.
                upstream.dispose()
                if let other {
                    other.run(downstream.observer, in: lifetime)
                } else {
                    downstream.sendFailed(TimeoutError(ms: dueMs))
                }
            }
        }

        arm(0)
        upstream.inner = source.start(
            Observer { event in
                switch event {
                case .value(let value):
                    let generation: Int? = state.withLock { state in
                        guard !state.isTimedOut, !state.isTerminated else { return nil }
                        state.generation += 1
                        return state.generation
                    }
                    guard let generation else { return }
                    downstream.send(value: value)
                    arm(generation)
                case .completed, .failed, .interrupted:
                    let isLive = state.withLock { state in
                        guard !state.isTimedOut, !state.isTerminated else { return false }
                        state.isTerminated = true
                        return true
                    }
                    guard isLive else { return }
                    timer.dispose()
                    downstream.send(event)
                }
            })
    }
}

/// The failure of a `timeout` whose deadline passed: `timed out after 500 ms`.
public struct TimeoutError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The deadline, in milliseconds.
    public let ms: Int

    /// A timeout of `ms` milliseconds.
    ///
    /// - Parameter ms: The deadline that passed.
    public init(ms: Int) {
        self.ms = ms
    }

    public var description: String { "timed out after \(ms) ms" }
}

extension Producer {
    /// Fails with a `TimeoutError` when no value arrives within `dueMs` milliseconds of the
    /// subscription or of the previous value; the source is disposed then.
    ///
    /// ```swift
    /// pay(order).timeout(5_000, on: scheduler)   // fails at 5 s if the payment says nothing
    /// ```
    ///
    /// - Parameters:
    ///   - dueMs: The longest wait for each value.
    ///   - scheduler: Measures the time and delivers the failure.
    /// - Returns: The producer with a deadline; completion or failure in time passes through.
    public func timeout(_ dueMs: Int, on scheduler: Scheduler) -> Producer<Value> {
        Producer { observer, lifetime in Timeout.run(self, dueMs, nil, scheduler, observer, lifetime) }
    }

    /// Switches to `other` when no value arrives within `dueMs` milliseconds of the
    /// subscription or of the previous value; the source is disposed then.
    ///
    /// ```swift
    /// live.timeout(2_000, other: cached, on: scheduler)
    /// ```
    ///
    /// - Parameters:
    ///   - dueMs: The longest wait for each value.
    ///   - other: What runs on, in the source's place, once the deadline passes.
    ///   - scheduler: Measures the time and starts `other`.
    /// - Returns: The producer with a deadline and a fallback.
    public func timeout(_ dueMs: Int, other: Producer<Value>, on scheduler: Scheduler) -> Producer<Value> {
        Producer { observer, lifetime in Timeout.run(self, dueMs, other, scheduler, observer, lifetime) }
    }
}
