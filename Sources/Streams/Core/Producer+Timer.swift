extension Producer {
    /// A producer that sends `value` after `delayMs` milliseconds, then completes.
    ///
    /// ```swift
    /// Producer.timer(300, "go", on: scheduler)   // "go" at 300 ms, then completed
    /// ```
    ///
    /// - Parameters:
    ///   - delayMs: The delay, in the scheduler's milliseconds.
    ///   - value: The value to send.
    ///   - scheduler: Where time is measured and the events are sent.
    /// - Returns: The producer.
    public static func timer(_ delayMs: Int, _ value: Value, on scheduler: Scheduler) -> Producer<Value> {
        Producer { observer, lifetime in
            lifetime += scheduler.schedule(after: delayMs) {
                observer.send(value: value)
                observer.sendCompleted()
            }
        }
    }
}

extension Producer where Value == Int {
    /// A producer that sends `0` after `delayMs` milliseconds, then completes.
    ///
    /// - Parameters:
    ///   - delayMs: The delay.
    ///   - scheduler: Where time is measured and the events are sent.
    /// - Returns: The producer.
    public static func timer(_ delayMs: Int, on scheduler: Scheduler) -> Producer<Int> {
        timer(delayMs, 0, on: scheduler)
    }

    /// A producer that sends 0, 1, 2, ... every `periodMs` milliseconds, the first after one
    /// period; it never completes.
    ///
    /// ```swift
    /// Producer.interval(100, on: scheduler).take(3)   // 0 at 100, 1 at 200, 2 at 300
    /// ```
    ///
    /// - Parameters:
    ///   - periodMs: The period; must be positive.
    ///   - scheduler: Where time is measured and the values are sent.
    /// - Returns: The producer.
    public static func interval(_ periodMs: Int, on scheduler: Scheduler) -> Producer<Int> {
        Producer { observer, lifetime in
            let counter = Locked(0)
            lifetime += scheduler.schedule(after: periodMs, interval: periodMs) {
                let tick = counter.withLock { count in
                    defer { count += 1 }
                    return count
                }
                observer.send(value: tick)
            }
        }
    }
}
