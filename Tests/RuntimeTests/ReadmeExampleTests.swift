import Runtime
import XCTest

final class ReadmeExampleTests: XCTestCase {
    func testReadmeCounterExample() {
        // --- README example (keep in sync with the README snippet) ---
        enum Action: Sendable { case increment, decrement, reset }
        enum Mutation: Sendable { case add(Int), set(Int) }

        let counter = Interactor<Int, Action, Mutation, Never>(
            initial: 0,
            handle: { action, count in
                switch action {
                case .increment: .one(.add(1))
                case .decrement: count > 0 ? .one(.add(-1)) : .none   // handle sees the latest state
                case .reset: .one(.set(0))
                }
            },
            reduce: { count, mutation in
                switch mutation {
                case .add(let n): count += n
                case .set(let n): count = n
                }
                return nil
            })
        counter.state.producer.start(value: { print("count:", $0) })
        counter.send(.increment)
        counter.send(.increment)
        counter.send(.decrement)
        // --- end of README example ---
        XCTAssertEqual(counter.state.value, 1)
        counter.send(.reset)
        counter.send(.decrement)
        XCTAssertEqual(counter.state.value, 0)
    }
}
