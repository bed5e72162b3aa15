/// `delay`: values and completion shifted later by a fixed time; a failure or interruption is
/// forwarded at once, dropping what is still pending.
///
/// The source runs as its own subscription, torn down when it terminates, while its delayed
/// events are still on their way.
enum Delay {
    static func run<Value: Sendable>(
        _ source: Producer<Value>, _ delayMs: Int, _ scheduler: Scheduler,
        _ observer: Observer<Value>, _ lifetime: Lifetime
    ) {
        let downstream = Serializer(observer)
        lifetime += source.start(
            Observer { event in
                switch event {
                case .value, .completed:
                    // Each pending event is tied to the lifetime until it fires.
                    let pending = SerialDisposable()
                    guard let token = lifetime.add(pending) else { return }
                    pending.inner = scheduler.schedule(after: delayMs) {
                        lifetime.remove(token)
                        downstream.send(event)
                    }
                case .failed, .interrupted:
                    downstream.send(event)
                }
            })
    }
}

extension Producer {
    /// Shifts values and completion `delayMs` milliseconds later; failures are not delayed.
    ///
    /// ```swift
    /// Producer.just("hint").delay(500, on: scheduler)   // "hint" at 500 ms
    /// ```
    ///
    /// - Parameters:
    ///   - delayMs: The shift.
    ///   - scheduler: Measures the time and delivers the delayed events.
    /// - Returns: The delayed producer.
    public func delay(_ delayMs: Int, on scheduler: Scheduler) -> Producer<Value> {
        Producer { observer, lifetime in Delay.run(self, delayMs, scheduler, observer, lifetime) }
    }
}
