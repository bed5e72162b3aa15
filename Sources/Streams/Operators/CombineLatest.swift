/// `combineLatest`: once every source has sent a value, emits the array of their latest values
/// whenever any of them sends one.
///
/// Each source runs as its own subscription (torn down when it terminates). The result completes
/// when every source has completed, or as soon as a source sends while every source still
/// without a value has completed (nothing could ever be emitted); it fails when any source fails.
final class CombineLatest<Value: Sendable>: Sendable {
    private struct State {
        var latest: [Value?]
        var valueCount = 0
        var isDone: [Bool]
        var doneCount = 0
    }

    private let state: Locked<State>
    private let downstream: Serializer<[Value]>
    private let count: Int

    init(count: Int, _ observer: Observer<[Value]>) {
        self.count = count
        state = Locked(
            State(latest: Array(repeating: nil, count: count), isDone: Array(repeating: false, count: count)))
        downstream = Serializer(observer)
    }

    func run(_ sources: [Producer<Value>], in lifetime: Lifetime) {
        guard !sources.isEmpty else { return downstream.sendCompleted() }
        for (index, source) in sources.enumerated() {
            if lifetime.hasEnded { return }
            lifetime += source.start(
                Observer { [self] event in
                    switch event {
                    case .value(let value): receive(value, at: index)
                    case .completed: complete(index)
                    case .failed(let error): downstream.sendFailed(error)
                    case .interrupted: downstream.sendInterrupted()
                    }
                })
        }
    }

    private enum Outcome {
        case emit([Value])
        case complete
        case wait
    }

    private func receive(_ value: Value, at index: Int) {
        let count = self.count
        let outcome: Outcome = state.withLock { state in
            if state.latest[index] == nil { state.valueCount += 1 }
            state.latest[index] = value
            if state.valueCount == count { return .emit(state.latest.map { $0! }) }
            let othersDone = state.isDone.indices.allSatisfy { $0 == index || state.isDone[$0] }
            return othersDone ? .complete : .wait
        }
        switch outcome {
        case .emit(let values): downstream.send(value: values)
        case .complete: downstream.sendCompleted()
        case .wait: break
        }
    }

    private func complete(_ index: Int) {
        let count = self.count
        let isDone = state.withLock { state in
            if !state.isDone[index] {
                state.isDone[index] = true
                state.doneCount += 1
            }
            return state.doneCount == count
        }
        if isDone { downstream.sendCompleted() }
    }
}

extension Producer {
    /// Combines the latest values of `producers` into arrays, one array per value sent once all
    /// have sent at least one.
    ///
    /// ```swift
    /// Producer.combineLatest([name.producer, email.producer])   // ["ann", "a@b.c"], ...
    /// ```
    ///
    /// An empty array gives a producer that completes at once without values.
    ///
    /// - Parameter producers: The sources, run together.
    /// - Returns: A producer of arrays in the order of `producers`.
    public static func combineLatest(_ producers: [Producer<Value>]) -> Producer<[Value]> {
        Producer<[Value]> { observer, lifetime in
            CombineLatest<Value>(count: producers.count, observer).run(producers, in: lifetime)
        }
    }

    /// Combines the latest values of two producers of different types into tuples.
    ///
    /// ```swift
    /// Producer.combineLatest(query.producer, filters.producer).map { query, filters in ... }
    /// ```
    ///
    /// - Parameters:
    ///   - first: The first source.
    ///   - second: The second source.
    /// - Returns: A producer of `(first, second)` pairs.
    public static func combineLatest<First: Sendable, Second: Sendable>(
        _ first: Producer<First>, _ second: Producer<Second>
    ) -> Producer<(First, Second)> where Value == (First, Second) {
        let erased: [Producer<Either<First, Second>>] = [first.map(Either.first), second.map(Either.second)]
        return Producer<Either<First, Second>>.combineLatest(erased).map { pair in
            guard case .first(let left) = pair[0], case .second(let right) = pair[1] else {
                preconditionFailure("combineLatest lost the order of its sources")
            }
            return (left, right)
        }
    }
}

/// One of two types, for combining producers of different types through one implementation.
enum Either<First: Sendable, Second: Sendable>: Sendable {
    case first(First)
    case second(Second)
}
