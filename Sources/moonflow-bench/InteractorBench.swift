import Runtime
import Streams

// The counter feature of DESIGN §10 (d): the same handle/reduce through the Interactor's
// synchronous path and through a plain Swift loop, side by side.

private enum CounterAction: Sendable { case increment }
private enum CounterMutation: Sendable { case add(Int) }
private struct CounterState: Sendable { var count = 0 }

@inline(never)
private func counterHandle(_ action: CounterAction, _ state: CounterState) -> CounterMutation {
    switch action { case .increment: .add(1) }
}

@inline(never)
private func counterReduce(_ state: inout CounterState, _ mutation: CounterMutation) -> Never? {
    switch mutation { case .add(let n): state.count += n }
    return nil
}

/// What the observer writes to, so the work cannot be optimized away.
private final class Sink: @unchecked Sendable {
    var count = 0
}

/// Prints ns per action for 1,000,000 counter actions through `Interactor` (immediate schedulers,
/// one state observer reading `count`) and through a plain function loop, and their ratio.
func interactorBench() {
    let iterations = 1_000_000
    let sink = Sink()

    let plain = medianNanos(runs: 7, iterations: iterations) { n in
        var state = CounterState()
        let observe: (CounterState) -> Void = { sink.count = $0.count }
        for _ in 0..<n {
            let mutation = counterHandle(.increment, state)
            _ = counterReduce(&state, mutation)
            observe(state)
        }
    }
    precondition(sink.count == iterations)

    let interactor = medianNanos(runs: 7, iterations: iterations) { n in
        let counter = Interactor<CounterState, CounterAction, CounterMutation, Never>(
            initial: CounterState(),
            handle: { action, state in .one(counterHandle(action, state)) },
            reduce: { state, mutation in counterReduce(&state, mutation) })
        let subscription = counter.state.producer.start(value: { sink.count = $0.count })
        for _ in 0..<n { counter.send(.increment) }
        subscription.dispose()
    }
    precondition(sink.count == iterations)

    print("counter, \(iterations) actions (median of 7 runs)")
    print("  plain Swift loop       \(format(plain, "ns/action"))")
    print("  Interactor (sync path) \(format(interactor, "ns/action"))")
    print("  ratio                  \(String(format: "%10.1fx", interactor / plain))")
}
