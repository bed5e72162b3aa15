import Runtime
import XCTest

final class ReadmeExampleTests: XCTestCase {
    func testReadmeCounterExample() {
        // --- docs/embedding.md example: keep in sync with "The Swift core: streams and the Interactor" ---
        enum Action: Sendable { case increment, decrement }
        enum Mutation: Sendable { case add(Int) }
        let counter = Interactor<Int, Action, Mutation, Never>(
            initial: 0,
            handle: { action, count in
                switch action {
                case .increment: .one(.add(1))
                case .decrement: count > 0 ? .one(.add(-1)) : .none  // sees the latest state
                }
            },
            reduce: { count, mutation in
                if case .add(let n) = mutation { count += n }
                return nil
            })
        counter.state.producer.start(value: { print("count:", $0) })  // count: 0
        counter.send(.increment)  // count: 1
        // --- end of docs/embedding.md example ---
        counter.send(.decrement)
        counter.send(.decrement)  // ignored: the handler saw count == 0
        XCTAssertEqual(counter.state.value, 0)
        counter.send(.increment)
        XCTAssertEqual(counter.currentState, 1)
    }
}
