import Streams

extension Interactor {
    /// The current state, then every state after a reduced mutation, as an `AsyncSequence`.
    ///
    ///     for await count in counter.stateValues { print(count) }
    ///
    /// Subscribes when the property is read, so nothing sent after that is missed; ends on `dispose()`.
    public var stateValues: AsyncStream<State> { makeAsyncStream(state.producer) }
    /// `mutations` as an `AsyncSequence`.
    public var mutationValues: AsyncStream<Traced<Mutation>> { makeAsyncStream(mutations.producer) }
}

/// Starts `producer` now and buffers its values into an `AsyncStream` that ends when it terminates.
///
/// - Parameter producer: The stream to observe; it is disposed when the consumer stops iterating.
/// - Returns: The values, in order, unbounded buffer.
func makeAsyncStream<Value: Sendable>(_ producer: Producer<Value>) -> AsyncStream<Value> {
    let (stream, continuation) = AsyncStream<Value>.makeStream()
    let disposable = producer.start(
        Observer { event in
            if case .value(let value) = event { continuation.yield(value) } else { continuation.finish() }
        })
    continuation.onTermination = { _ in disposable.dispose() }
    return stream
}
