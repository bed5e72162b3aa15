/// `observe(on:)`: every event delivered through `scheduler`, in order.
///
/// Events are buffered and one scheduled action drains the buffer, so a burst of values costs
/// one scheduling, not one per value. The scheduler must run actions one at a time in order
/// (every scheduler in this module does).
enum ObserveOn {
    private struct Buffer<Value: Sendable> {
        var events: [Event<Value>] = []
        var isScheduled = false
    }

    static func run<Value: Sendable>(
        _ source: Producer<Value>, _ scheduler: Scheduler, _ observer: Observer<Value>, _ lifetime: Lifetime
    ) {
        let buffer = Locked(Buffer<Value>())
        let pending = SerialDisposable()
        lifetime += pending

        @Sendable func drain() {
            while true {
                let batch: [Event<Value>] = buffer.withLock { buffer in
                    if buffer.events.isEmpty { buffer.isScheduled = false }
                    defer { buffer.events = [] }
                    return buffer.events
                }
                if batch.isEmpty { return }
                for event in batch {
                    if lifetime.hasEnded { return }
                    observer.send(event)
                }
            }
        }

        source.run(
            Observer { event in
                let needsScheduling = buffer.withLock { buffer in
                    buffer.events.append(event)
                    defer { buffer.isScheduled = true }
                    return !buffer.isScheduled
                }
                if needsScheduling { pending.inner = scheduler.schedule(drain) }
            }, in: lifetime)
    }
}

extension Producer {
    /// Delivers every event through `scheduler`, keeping their order.
    ///
    /// ```swift
    /// states.observe(on: mainScheduler).start(value: render)
    /// ```
    ///
    /// - Parameter scheduler: Where the observer is called.
    /// - Returns: The producer whose events arrive on `scheduler`.
    public func observe(on scheduler: Scheduler) -> Producer<Value> {
        Producer { observer, lifetime in ObserveOn.run(self, scheduler, observer, lifetime) }
    }

    /// Starts the work through `scheduler` instead of on the thread calling `start`.
    ///
    /// ```swift
    /// expensiveScan.start(on: workScheduler)
    /// ```
    ///
    /// - Parameter scheduler: Where the producer's start closure runs.
    /// - Returns: The producer that starts on `scheduler`.
    public func start(on scheduler: Scheduler) -> Producer<Value> {
        Producer { observer, lifetime in
            lifetime += scheduler.schedule { self.run(observer, in: lifetime) }
        }
    }
}
