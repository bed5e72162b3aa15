/// `takeUntil`: the source's values until `trigger` sends a value, then completion.
///
/// The trigger is started first, as its own subscription: completing without a value changes
/// nothing; failing fails the result.
enum TakeUntil {
    static func run<Value: Sendable, Trigger: Sendable>(
        _ source: Producer<Value>, _ trigger: Producer<Trigger>, _ observer: Observer<Value>, _ lifetime: Lifetime
    ) {
        let downstream = Serializer(observer)
        lifetime += trigger.start(
            Observer { event in
                switch event {
                case .value: downstream.sendCompleted()
                case .failed(let error): downstream.sendFailed(error)
                case .interrupted: downstream.sendInterrupted()
                case .completed: break
                }
            })
        if lifetime.hasEnded { return }
        source.run(downstream.observer, in: lifetime)
    }
}

extension Producer {
    /// Forwards values until `trigger` sends a value, then completes.
    ///
    /// ```swift
    /// ticks.takeUntil(stopButton.producer)
    /// ```
    ///
    /// - Parameter trigger: Ends the result with its first value.
    /// - Returns: The producer cut off by the trigger.
    public func takeUntil<Trigger: Sendable>(_ trigger: Producer<Trigger>) -> Producer<Value> {
        Producer { observer, lifetime in TakeUntil.run(self, trigger, observer, lifetime) }
    }
}
