import Foundation

/// Input lines handed over one at a time from the test, as a person would type them.
package final class Feed: @unchecked Sendable {
    private let condition = NSCondition()
    private var lines: [String] = []
    private var ended = false

    package init() {}

    package func send(_ new: String...) {
        condition.withLock {
            lines += new; condition.broadcast()
        }
    }
    package func end() {
        condition.withLock {
            ended = true; condition.broadcast()
        }
    }
    package func next() -> String? {
        condition.withLock {
            while lines.isEmpty && !ended { condition.wait() }
            return lines.isEmpty ? nil : lines.removeFirst()
        }
    }
}
