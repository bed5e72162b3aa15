import Runtime
import Streams
import StreamsTesting
import XCTest

/// Effects returned by the reducer: internal ones feed mutations back, the others go out.
final class EffectTests: XCTestCase {
    enum Action: Sendable, Equatable { case open(Int), fetch(Int) }
    enum Mutation: Sendable, Equatable { case requested(Int), fetched(String), selected(Int) }
    enum Effect: Sendable, Equatable { case load(Int), navigate(Int) }
    struct State: Sendable, Equatable {
        var pending: [Int] = []
        var names: [String] = []
    }

    private func makeInteractor(
        scheduler: TestScheduler, effectStates: Locked<[State]> = Locked([]), failLoads: Bool = false
    ) -> Interactor<State, Action, Mutation, Effect> {
        Interactor(
            initial: State(),
            handle: { action, _ in
                switch action {
                case .open(let id): .one(.selected(id))
                case .fetch(let id): .one(.requested(id))
                }
            },
            reduce: { state, mutation in
                switch mutation {
                case .requested(let id):
                    state.pending.append(id)
                    return .load(id)
                case .fetched(let name):
                    state.names.append(name)
                    state.pending.removeFirst()
                    return nil
                case .selected(let id):
                    return .navigate(id)
                }
            },
            effects: { effect, state in
                guard case .load(let id) = effect else { return nil }  // navigate goes out
                effectStates.mutate { $0.append(state) }
                if failLoads { return .fail(TestError("offline")) }
                return .timer(100, .fetched("item \(id)"), on: scheduler)
            })
    }

    func testInternalEffectsFeedMutationsBackIntoTheLoop() {
        let scheduler = TestScheduler()
        let effectStates = Locked<[State]>([])
        let interactor = makeInteractor(scheduler: scheduler, effectStates: effectStates)
        let mutations = Recording(interactor.mutations)
        let outward = Recording(interactor.effects)
        interactor.send(.fetch(7))
        XCTAssertEqual(effectStates.value.map(\.pending), [[7]], "the handler sees the state after the reduce")
        XCTAssertEqual(interactor.inFlight.map(\.actionID), [1])
        if case .effect(let effect)? = interactor.inFlight.first?.kind {
            XCTAssertEqual(effect, .load(7))
        } else {
            XCTFail("expected an effect in flight")
        }
        scheduler.advance(by: 100)
        XCTAssertEqual(interactor.state.value, State(pending: [], names: ["item 7"]))
        XCTAssertEqual(mutations.values.map(\.value), [.requested(7), .fetched("item 7")])
        XCTAssertEqual(mutations.values.map(\.action), [.fetch(7), .fetch(7)], "fed-back mutations keep their action")
        XCTAssertEqual(outward.values.count, 0, "internal effects do not go out")
        XCTAssertTrue(interactor.isIdle)
    }

    func testEffectsWithoutAHandlerGoOutWithTheirAction() {
        let scheduler = TestScheduler()
        let interactor = makeInteractor(scheduler: scheduler)
        let outward = Recording(interactor.effects)
        interactor.send(.fetch(1))
        interactor.send(.open(3))
        XCTAssertEqual(outward.values.map(\.value), [.navigate(3)])
        XCTAssertEqual(outward.values.map(\.action), [.open(3)])
        XCTAssertEqual(outward.values.map(\.actionID), [2])
    }

    func testAFailingEffectStreamIsReportedAndTheLoopGoesOn() {
        let scheduler = TestScheduler()
        let interactor = makeInteractor(scheduler: scheduler, failLoads: true)
        let errors = Recording(interactor.errors)
        interactor.send(.fetch(1))
        interactor.send(.open(2))
        XCTAssertEqual(errors.values.map(\.stage), [.effect])
        XCTAssertEqual(errors.values.map(\.action), [.fetch(1)])
        XCTAssertEqual(errors.values.first?.error as? TestError, TestError("offline"))
        XCTAssertEqual(interactor.state.value.pending, [1])
        XCTAssertTrue(interactor.inFlight.isEmpty)
    }
}
