/// `catchError`: on failure, switch to the producer the handler makes for the error.
///
/// The source runs as its own subscription and is torn down when it fails; the replacement
/// then runs in the result's lifetime.
enum CatchError {
    static func run<Value: Sendable>(
        _ source: Producer<Value>, _ handler: @escaping @Sendable (any Error) throws -> Producer<Value>,
        _ observer: Observer<Value>, _ lifetime: Lifetime
    ) {
        lifetime += source.start(
            Observer { event in
                guard case .failed(let error) = event else { return observer.send(event) }
                let replacement: Producer<Value>
                do { replacement = try handler(error) } catch { return observer.sendFailed(error) }
                replacement.run(observer, in: lifetime)
            })
    }
}

extension Producer {
    /// Replaces a failure with the producer `handler` makes from the error.
    ///
    /// ```swift
    /// search(query).catchError { error in .just(.failure(error.localizedDescription)) }
    /// ```
    ///
    /// - Parameter handler: Makes the replacement; if it throws, the result fails with that error.
    /// - Returns: The producer with failures handled.
    public func catchError(_ handler: @escaping @Sendable (any Error) throws -> Producer<Value>) -> Producer<Value> {
        Producer { observer, lifetime in CatchError.run(self, handler, observer, lifetime) }
    }
}
