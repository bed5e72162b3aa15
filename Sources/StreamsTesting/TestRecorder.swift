import Foundation
import Streams

/// An observer that records every event with the virtual time it arrived at.
///
/// ```swift
/// let recorder = TestRecorder<Int>(scheduler)
/// Producer.just(1).start(recorder.observer)
/// XCTAssertEqual(recorder.events, [.value(0, 1), .completed(0)])
/// ```
public final class TestRecorder<Value: Sendable>: @unchecked Sendable {
    private let scheduler: TestScheduler
    private let lock = NSLock()
    private var recorded: [Recorded<Value>] = []

    /// Creates a recorder that stamps events with `scheduler`'s clock.
    ///
    /// - Parameter scheduler: The clock.
    public init(_ scheduler: TestScheduler) {
        self.scheduler = scheduler
    }

    /// The observer to start producers with.
    public var observer: Observer<Value> {
        Observer { event in
            let time = self.scheduler.now
            self.lock.withLock { self.recorded.append(Recorded(time: time, event: event)) }
        }
    }

    /// Every event so far, in arrival order.
    public var events: [Recorded<Value>] {
        lock.withLock { recorded }
    }

    /// The values so far, without times.
    public var values: [Value] {
        events.compactMap(\.event.value)
    }
}
