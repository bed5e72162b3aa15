import Runtime
import Streams
import StreamsTesting
import XCTest

/// Errors are reported with their action and never end the loop.
final class ErrorTests: XCTestCase {
    enum Action: Sendable, Equatable { case add(Int), failLater, failAfterOne, corrupt }
    enum Mutation: Sendable, Equatable { case add(Int), corrupt }
    struct State: Sendable, Equatable {
        var total = 0
        var history: [Int] = []
    }

    private func makeInteractor(scheduler: TestScheduler) -> Interactor<State, Action, Mutation, Never> {
        Interactor(
            initial: State(),
            handle: { action, _ in
                switch action {
                case .add(let n): .one(.add(n))
                case .failLater:
                    .stream(
                        Producer<Mutation>.timer(50, .add(0), on: scheduler).flatMap(.merge) { _ in
                            .fail(TestError("timeout"))
                        })
                case .failAfterOne: .stream(.concat([.just(.add(100)), .fail(TestError("broken"))]))
                case .corrupt: .many([.add(1), .corrupt, .add(2)])
                }
            },
            reduce: { state, mutation in
                switch mutation {
                case .add(let n):
                    state.total += n
                    state.history.append(n)
                case .corrupt:
                    state.history.removeAll()  // changes made before the throw must not stick
                    state.total = -1
                    throw TestError("corrupt mutation")
                }
                return nil
            })
    }

    func testAFailingHandlerStreamIsReportedWithItsActionAndTheLoopGoesOn() {
        let scheduler = TestScheduler()
        let interactor = makeInteractor(scheduler: scheduler)
        let errors = Recording(interactor.errors)
        interactor.send(.failLater)
        interactor.send(.add(1))
        scheduler.advance(by: 50)
        interactor.send(.add(2))
        XCTAssertEqual(interactor.state.value.total, 3)
        XCTAssertEqual(errors.values.map(\.stage), [.handle])
        XCTAssertEqual(errors.values.map(\.action), [.failLater])
        XCTAssertEqual(errors.values.map(\.actionID), [1])
        XCTAssertFalse(errors.hasEnded)
        XCTAssertTrue(interactor.isIdle)
    }

    func testValuesBeforeAStreamFailsAreKept() {
        let interactor = makeInteractor(scheduler: TestScheduler())
        let errors = Recording(interactor.errors)
        interactor.send(.failAfterOne)
        XCTAssertEqual(interactor.state.value.total, 100)
        XCTAssertEqual(errors.values.first?.error as? TestError, TestError("broken"))
    }

    func testAThrowingReducerLeavesTheStateAsItWasAndTheLoopGoesOn() {
        let interactor = makeInteractor(scheduler: TestScheduler())
        let errors = Recording(interactor.errors)
        let states = Recording(interactor.state.producer)
        interactor.send(.add(5))
        interactor.send(.corrupt)
        XCTAssertEqual(interactor.state.value, State(total: 8, history: [5, 1, 2]))
        XCTAssertEqual(states.values.map(\.total), [0, 5, 6, 8], "the rejected mutation published nothing")
        XCTAssertEqual(errors.values.map(\.stage), [.reduce])
        XCTAssertEqual(errors.values.map(\.action), [.corrupt])
        XCTAssertEqual("\(errors.values[0])", "reduce failed for action #2 corrupt: corrupt mutation")
        interactor.send(.add(1))
        XCTAssertEqual(interactor.state.value.total, 9)
    }
}
