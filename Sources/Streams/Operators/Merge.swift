extension Producer {
    /// A producer that runs all `producers` at once and forwards every value as it arrives.
    ///
    /// ```swift
    /// Producer.merge([clicks, keyPresses])
    /// ```
    ///
    /// - Parameter producers: The producers to run together.
    /// - Returns: The merge; it completes when all complete and fails when any fails.
    public static func merge(_ producers: [Producer<Value>]) -> Producer<Value> {
        Producer<Producer<Value>>.from(producers).flatten(.merge)
    }

    /// Runs this producer and `other` at once, forwarding the values of both.
    ///
    /// - Parameter other: The producer to run alongside.
    /// - Returns: The merge.
    public func merge(with other: Producer<Value>) -> Producer<Value> {
        .merge([self, other])
    }
}
