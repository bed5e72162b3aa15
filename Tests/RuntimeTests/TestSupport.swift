import Foundation
import Runtime
import Streams
import XCTest

/// A thread-safe box for test bookkeeping.
final class Box<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: T
    init(_ value: T) { stored = value }
    var value: T {
        get { lock.lock(); defer { lock.unlock() }; return stored }
        set { lock.lock(); defer { lock.unlock() }; stored = newValue }
    }
    func mutate(_ body: (inout T) -> Void) { lock.lock(); defer { lock.unlock() }; body(&stored) }
}

/// Records every value a signal or producer sends, and whether it terminated.
final class Recording<Value: Sendable>: @unchecked Sendable {
    private let box = Box<[Value]>([])
    private let ended = Box(false)
    private var disposable: Disposable?

    convenience init(_ signal: Signal<Value>) { self.init(signal.producer) }

    init(_ producer: Producer<Value>) {
        let box = self.box
        let ended = self.ended
        disposable = producer.start(Observer { event in
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
func tracked<Value: Sendable>(_ alive: Box<Int>) -> Producer<Value> {
    Producer { _, lifetime in
        alive.mutate { $0 += 1 }
        lifetime.observeEnded { alive.mutate { $0 -= 1 } }
    }
}
