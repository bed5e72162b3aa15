import Foundation
import Streams
import XCTest

/// `MainScheduler`: at once on the main thread (nested actions after the running one, in
/// order), on the main queue's next turn from elsewhere, timers on the main thread in real time.
/// (XCTest runs these tests on the main thread.)
final class MainSchedulerTests: XCTestCase {
    func testOnTheMainThreadAnActionRunsBeforeScheduleReturnsAndNestedOnesRunAfterItInOrder() {
        XCTAssertTrue(Thread.isMainThread)
        let order = Locked<[String]>([])
        let scheduler = MainScheduler.shared
        scheduler.schedule {
            order.withLock { $0.append("outer start") }
            scheduler.schedule { order.withLock { $0.append("first nested") } }
            let cancelled = scheduler.schedule { order.withLock { $0.append("cancelled") } }
            cancelled.dispose()
            scheduler.schedule {
                order.withLock { $0.append("second nested") }
                scheduler.schedule { order.withLock { $0.append("nested in nested") } }
            }
            order.withLock { $0.append("outer end") }
        }
        XCTAssertEqual(
            order.withLock { $0 }, ["outer start", "outer end", "first nested", "second nested", "nested in nested"])
    }

    func testFromAnotherThreadAnActionRunsOnTheMainThreadLater() {
        let ran = expectation(description: "ran on the main thread")
        DispatchQueue.global().async {
            MainScheduler.shared.schedule {
                XCTAssertTrue(Thread.isMainThread)
                ran.fulfill()
            }
        }
        wait(for: [ran], timeout: 5)
    }

    func testTimersRunOnTheMainThreadInRealTime() {
        let fired = expectation(description: "the timer fired")
        let start = Date()
        let elapsed = Locked<TimeInterval>(0)
        MainScheduler.shared.schedule(after: 30) {
            XCTAssertTrue(Thread.isMainThread)
            elapsed.withLock { $0 = Date().timeIntervalSince(start) }
            fired.fulfill()
        }
        wait(for: [fired], timeout: 5)
        XCTAssertGreaterThanOrEqual(elapsed.withLock { $0 }, 0.025)
    }
}
