/// `throttle`: at most one value per window of `windowMs` (RxSwift semantics).
///
/// A value arriving when the last forwarded one is at least a window old goes out at once.
/// Otherwise, with `latest`, the newest such value is kept and sent when the window ends (a
/// completion arriving meanwhile waits for it); without `latest` it is dropped. The source runs
/// as its own subscription, torn down when it terminates even if a value is still held back.
enum Throttle {
    private enum Action {
        case send
        case schedule(afterMs: Int)
        case none
    }

    private struct State<Value> {
        var lastSent: Int?
        var held: Value?
        var isCompleted = false
    }

    static func run<Value: Sendable>(
        _ source: Producer<Value>, _ windowMs: Int, _ latest: Bool, _ scheduler: Scheduler,
        _ observer: Observer<Value>, _ lifetime: Lifetime
    ) {
        let downstream = Serializer(observer)
        let state = Locked(State<Value>())
        let timer = SerialDisposable()
        lifetime += timer

        @Sendable func flush() {
            let (held, isCompleted): (Value?, Bool) = state.withLock { state in
                defer { state.held = nil }
                if state.held != nil { state.lastSent = scheduler.now }
                return (state.held, state.isCompleted)
            }
            if let held { downstream.send(value: held) }
            if isCompleted { downstream.sendCompleted() }
        }

        lifetime += source.start(
            Observer { event in
                switch event {
                case .value(let value):
                    let now = scheduler.now
                    let action: Action = state.withLock { state in
                        let remaining = state.lastSent.map { windowMs - (now - $0) } ?? 0
                        if remaining <= 0 {
                            state.held = nil
                            state.lastSent = now
                            return .send
                        }
                        guard latest else { return .none }
                        let isScheduled = state.held != nil
                        state.held = value
                        return isScheduled ? .none : .schedule(afterMs: remaining)
                    }
                    switch action {
                    case .send: downstream.send(value: value)
                    case .schedule(let remaining): timer.inner = scheduler.schedule(after: remaining, flush)
                    case .none: break
                    }
                case .completed:
                    let isHolding = state.withLock { state in
                        state.isCompleted = true
                        return state.held != nil
                    }
                    if !isHolding { downstream.sendCompleted() }
                case .failed, .interrupted:
                    state.withLock { $0.held = nil }
                    downstream.send(event)
                }
            })
    }
}

extension Producer {
    /// Lets at most one value through per `windowMs` milliseconds.
    ///
    /// ```swift
    /// scrollOffsets.throttle(100, on: scheduler)
    /// ```
    ///
    /// - Parameters:
    ///   - windowMs: The window length.
    ///   - latest: Whether the newest value held back during a window is sent when it ends.
    ///   - scheduler: Measures the time and delivers held-back values.
    /// - Returns: The throttled producer.
    public func throttle(_ windowMs: Int, latest: Bool = true, on scheduler: Scheduler) -> Producer<Value> {
        Producer { observer, lifetime in Throttle.run(self, windowMs, latest, scheduler, observer, lifetime) }
    }
}
