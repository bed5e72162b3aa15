import Foundation
import LuaKit

/// What explorations read from the wall clock (their budgets of seconds, the test's time left)
/// and from chance (a seed when none is given), in the order read: the first run of a spec
/// file keeps each, and a run of it again from its start (the debugger going back) reads
/// them again, so it explores exactly as it did; past the last kept, reads are new and kept.
package final class ExploreDecisions: @unchecked Sendable {
    private let lock = NSLock()
    private var kept: [LuaValue] = []
    private var next = 0

    package init() {}

    /// The next value read: the one kept at this place, or `read()`'s, kept.
    package func take(_ read: () -> LuaValue) -> LuaValue {
        lock.lock()
        defer { lock.unlock() }
        if next < kept.count {
            defer { next += 1 }
            return kept[next]
        }
        let value = read()
        kept.append(value)
        next += 1
        return value
    }

    /// The file runs again from its start: reads come from the first kept again.
    package func rewind() { lock.withLock { next = 0 } }

    /// Another file starts: nothing kept.
    package func forget() {
        lock.withLock {
            kept = []
            next = 0
        }
    }
}
