import Streams

extension Signal {
    /// Values that `transform` keeps, as a new signal.
    func compactMap<U: Sendable>(_ transform: @escaping @Sendable (Value) -> U?) -> Signal<U> {
        let (output, input) = Signal<U>.pipe()
        _ = observe(
            Observer { event in
                switch event {
                case .value(let v): if let u = transform(v) { input.send(value: u) }
                case .failed(let e): input.sendFailed(e)
                case .completed: input.sendCompleted()
                case .interrupted: input.sendInterrupted()
                }
            })
        return output
    }
}
