import Foundation
import Runtime
import Streams
import XCTest

/// Test bookkeeping from `@Sendable` closures, on Streams' `Locked`: a read or a write of the
/// whole value, or a change in place, each under the lock.
extension Locked {
    var value: State {
        get { withLock { $0 } }
        nonmutating set { withLock { $0 = newValue } }
    }
    func mutate(_ body: (inout State) -> Void) { withLock { body(&$0) } }
}

/// Records every value a signal or producer sends, and whether it terminated.
final class Recording<Value: Sendable>: @unchecked Sendable {
    private let box = Locked<[Value]>([])
    private let ended = Locked(false)
    private var disposable: Disposable?

    convenience init(_ signal: Signal<Value>) { self.init(signal.producer) }

    init(_ producer: Producer<Value>) {
        let box = self.box
        let ended = self.ended
        disposable = producer.start(
            Observer { event in
                if case .value(let value) = event { box.mutate { $0.append(value) } } else { ended.value = true }
            })
    }

    var values: [Value] { box.value }
    var hasEnded: Bool { ended.value }
    func reset() { box.value = [] }
}

struct TestError: Error, Equatable, CustomStringConvertible {
    let message: String
    init(_ message: String) { self.message = message }
    var description: String { message }
}

/// A producer that never sends, and says whether it is still subscribed.
func tracked<Value: Sendable>(_ alive: Locked<Int>) -> Producer<Value> {
    Producer { _, lifetime in
        alive.mutate { $0 += 1 }
        lifetime.observeEnded { alive.mutate { $0 -= 1 } }
    }
}
