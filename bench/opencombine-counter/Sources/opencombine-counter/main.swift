import Dispatch
import OpenCombine

// The counter of plugins/counter, natively: actions -> (handle with the latest
// state) -> mutations -> scan(reduce) -> state, the state fed back to `handle`
// (ReactorKit's shape: mutate(action) reads `currentState`), one observer
// reading `count` after every action, a milestone effect every ten.
//
// Usage: opencombine-counter ACTIONS RUNS
// Prints `opencombine_ns N`: the median ns per action over RUNS runs.

enum Action { case increment(by: Int?), incrementLater(ms: Int) }
enum Mutation { case add(Int) }
struct State { var count = 0 }

final class Counter {
    let actions = PassthroughSubject<Action, Never>()
    let state = CurrentValueSubject<State, Never>(State())
    let effects = PassthroughSubject<Int, Never>()
    private var subscriptions: [AnyCancellable] = []

    init() {
        let state = self.state
        let effects = self.effects
        actions
            .flatMap { action -> AnyPublisher<Mutation, Never> in
                Counter.handle(action, state.value)  // state feedback: the latest state
            }
            .scan(State()) { current, mutation in
                var next = current
                if case .add(let n) = mutation { next.count += n }
                if next.count % 10 == 0 { effects.send(next.count) }
                return next
            }
            .subscribe(state)
            .store(in: &subscriptions)
    }

    static func handle(_ action: Action, _ state: State) -> AnyPublisher<Mutation, Never> {
        switch action {
        case .increment(let by): Just(.add(by ?? 1)).eraseToAnyPublisher()
        case .incrementLater: Empty().eraseToAnyPublisher()
        }
    }
}

final class Sink { var count = 0; var milestones = 0 }

let arguments = CommandLine.arguments
let actions = arguments.count > 1 ? Int(arguments[1]) ?? 1_000_000 : 1_000_000
let runs = arguments.count > 2 ? Int(arguments[2]) ?? 5 : 5
var samples: [Double] = []
for _ in 0..<runs {
    let counter = Counter()
    let sink = Sink()
    let observation = counter.state.sink { sink.count = $0.count }
    let milestones = counter.effects.sink { _ in sink.milestones += 1 }
    let start = DispatchTime.now().uptimeNanoseconds
    for _ in 0..<actions { counter.actions.send(.increment(by: nil)) }
    let end = DispatchTime.now().uptimeNanoseconds
    precondition(sink.count == actions, "the observer missed a state: \(sink.count) of \(actions)")
    observation.cancel()
    milestones.cancel()
    samples.append(Double(end - start) / Double(actions))
}
samples.sort()
print("opencombine_ns \(samples[samples.count / 2])")
