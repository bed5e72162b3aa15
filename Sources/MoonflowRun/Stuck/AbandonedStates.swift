import Foundation

/// What stuck calls leave behind (a host, its feature, a listener: a whole Lua state), kept
/// while the stuck call still runs, since freeing a state would pull it from under the thread
/// that may come back into it, and let go as soon as that call returns (`busy` turns false;
/// the thread holds what it still uses). At most `limit` are kept at once: each holds its
/// state's memory (12 stuck calls of a 30 MB state took a run from 120 MB to 983 MB), so a run
/// that has `limit` left behind stops rebuilding and ends, saying so.
///
/// **Threading:** any thread.
package final class AbandonedStates: @unchecked Sendable {
    /// The one a process keeps: `run` and `test` share the memory they leave behind.
    package static let shared = AbandonedStates(limit: 4)

    package let limit: Int
    private let lock = NSLock()
    private var entries: [(held: [AnyObject], busy: @Sendable () -> Bool)] = []

    package init(limit: Int) { self.limit = limit }

    /// Keeps `held` until `busy()` is false, and lets go of what earlier calls left behind
    /// that has returned since. Returns false when `limit` states (this one included) are
    /// kept now: the caller makes no new state to get stuck in turn.
    @discardableResult
    package func keep(_ held: [AnyObject], while busy: @escaping @Sendable () -> Bool) -> Bool {
        release()
        return lock.withLock {
            entries.append((held, busy))
            return entries.count < limit
        }
    }

    /// Lets go of what every call that has returned left behind (its memory is freed here,
    /// or on its thread when that still holds it).
    package func release() {
        let done: [[AnyObject]] = lock.withLock {
            var done: [[AnyObject]] = []
            entries.removeAll { entry in
                if entry.busy() { return false }
                done.append(entry.held)
                return true
            }
            return done
        }
        _ = done  // released here, outside the lock
    }

    /// How many are kept now.
    package var count: Int { lock.withLock { entries.count } }
}
