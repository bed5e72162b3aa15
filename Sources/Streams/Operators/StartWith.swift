extension Producer {
    /// Sends `values` first, then the values of this producer.
    ///
    /// ```swift
    /// results.startWith(.loading)
    /// ```
    ///
    /// - Parameter values: Sent synchronously when the subscription starts.
    /// - Returns: The producer with the values prepended.
    public func startWith(_ values: Value...) -> Producer<Value> {
        startWith(contentsOf: values)
    }

    /// Sends `values` first, then the values of this producer.
    ///
    /// - Parameter values: Sent synchronously when the subscription starts.
    /// - Returns: The producer with the values prepended.
    public func startWith(contentsOf values: [Value]) -> Producer<Value> {
        Producer { observer, lifetime in
            for value in values {
                if lifetime.hasEnded { return }
                observer.send(value: value)
            }
            self.run(observer, in: lifetime)
        }
    }
}
