extension Producer {
    /// A producer that runs `producers` one after another, each starting when the previous
    /// completes; a failure ends it at once.
    ///
    /// ```swift
    /// Producer.concat([.just(1), .timer(300, 2, on: scheduler)])   // 1, then 2 at 300 ms
    /// ```
    ///
    /// - Parameter producers: The producers, in order.
    /// - Returns: The concatenation; it completes when the last one completes.
    public static func concat(_ producers: [Producer<Value>]) -> Producer<Value> {
        Producer<Producer<Value>>.from(producers).flatten(.concat)
    }

    /// Runs this producer, then `next` once it completes.
    ///
    /// - Parameter next: What follows.
    /// - Returns: The concatenation.
    public func concat(_ next: Producer<Value>) -> Producer<Value> {
        .concat([self, next])
    }
}
