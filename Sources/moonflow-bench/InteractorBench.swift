import Runtime
import Streams

// The counter feature: the same handle/reduce through the Interactor's
// synchronous path and through a plain Swift loop, side by side.

private enum CounterAction: Sendable { case increment }
private enum CounterMutation: Sendable { case add(Int) }
private struct CounterState: Sendable { var count = 0 }

@inline(never)
private func counterHandle(_ action: CounterAction, _ state: CounterState) -> CounterMutation {
    switch action {
    case .increment: .add(1)
    }
}

@inline(never)
private func counterReduce(_ state: inout CounterState, _ mutation: CounterMutation) -> Never? {
    switch mutation {
    case .add(let n): state.count += n
    }
    return nil
}

/// What the observer writes to, so the work cannot be optimized away.
private final class Sink: @unchecked Sendable {
    var count = 0
}

/// Prints ns per action for 1,000,000 counter actions through a plain function loop and through
/// `Interactor` (immediate schedulers, one observer reading `count` after each action: once via
/// `observeState`, once via the `state` Property), with each one's ratio to the plain loop.
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

    func throughInteractor(observeWithProperty: Bool) -> Double {
        medianNanos(runs: 7, iterations: iterations) { n in
            let counter = Interactor<CounterState, CounterAction, CounterMutation, Never>(
                initial: CounterState(),
                handle: { action, state in .one(counterHandle(action, state)) },
                reduce: { state, mutation in counterReduce(&state, mutation) })
            let subscription =
                observeWithProperty
                ? counter.state.producer.start(value: { sink.count = $0.count })
                : counter.observeState { sink.count = $0.count }
            for _ in 0..<n { counter.send(.increment) }
            subscription.dispose()
            precondition(sink.count == n)
        }
    }
    let interactor = throughInteractor(observeWithProperty: false)
    let property = throughInteractor(observeWithProperty: true)

    print("counter, \(iterations) actions (median of 7 runs)")
    print("  plain Swift loop                 \(format(plain, "ns/action"))")
    print(
        "  Interactor, observeState         \(format(interactor, "ns/action"))   \(String(format: "%.1fx", interactor / plain))"
    )
    print(
        "  Interactor, state Property       \(format(property, "ns/action"))   \(String(format: "%.1fx", property / plain))"
    )
}
