import Foundation

/// A scheduler with virtual time, for deterministic tests of anything time-based, and for
/// `moonflow run --clock virtual` and the test store.
///
/// Time starts at 0 and moves only when the test calls `advance(by:)`, `advance(to:)` or
/// `run()`; the due actions then run on the calling thread, earliest first, and actions due at
/// the same time run in the order they were scheduled. An action scheduled for "now" while the
/// clock is advancing runs within that same advance.
///
/// **Threading.** Scheduling is thread-safe, but drive the clock from one thread: determinism
/// comes from every action running on the thread that advances.
///
/// ```swift
/// let scheduler = TestScheduler()
/// let recorder = TestRecorder<Int>(scheduler)
/// Producer.timer(300, 7, on: scheduler).start(recorder.observer)
/// scheduler.advance(by: 299)   // nothing yet
/// scheduler.advance(by: 1)     // recorder.events == [.value(300, 7), .completed(300)]
/// ```
public final class TestScheduler: Scheduler, @unchecked Sendable {
    private struct Item {
        let due: Int
        let sequence: Int
        let interval: Int?
        let job: Job
        let disposable: AnyDisposable
    }

    /// What a scheduling runs, until it is cancelled: cancelling drops the action at once.
    /// Kept until its due time, the action (and whatever it holds, often this scheduler)
    /// would outlive a clock that never gets there. Guarded by the scheduler's lock.
    private final class Job: @unchecked Sendable {
        var action: (@Sendable () -> Void)?
        init(_ action: @escaping @Sendable () -> Void) { self.action = action }
    }

    private let lock = NSLock()
    private var clock: Int
    private var nextSequence = 0
    /// Sorted by due time, then by scheduling order.
    private var items: [Item] = []

    /// The most actions `run()` performs before it decides the work never settles.
    public var runLimit = 1_000_000

    /// Creates a scheduler whose clock reads `now`.
    ///
    /// - Parameter now: The starting virtual time in milliseconds.
    public init(now: Int = 0) {
        clock = now
    }

    public var now: Int {
        lock.withLock { clock }
    }

    /// How many actions are scheduled and not cancelled.
    /// How many timed actions have run: those the clock had to move to (or
    /// repeating ones), not those scheduled to run at once.
    public var firedTimerCount: Int { lock.withLock { timersFired } }
    private var timersFired = 0

    public var pendingCount: Int {
        lock.withLock { items.lazy.filter { !$0.disposable.isDisposed }.count }
    }

    /// Whether nothing is scheduled.
    public var isIdle: Bool {
        pendingCount == 0
    }

    /// When the earliest scheduled action is due, or `nil` if nothing is scheduled.
    public var nextDueTime: Int? {
        lock.withLock { items.first { !$0.disposable.isDisposed }?.due }
    }

    @discardableResult
    public func schedule(_ action: @escaping @Sendable () -> Void) -> Disposable {
        schedule(after: 0, action)
    }

    @discardableResult
    public func schedule(after delayMs: Int, _ action: @escaping @Sendable () -> Void) -> Disposable {
        insert(due: lock.withLock { clock }.saturatingAdd(max(0, delayMs)), interval: nil, action: action)
    }

    @discardableResult
    public func schedule(after delayMs: Int, interval: Int, _ action: @escaping @Sendable () -> Void) -> Disposable {
        precondition(interval > 0, "interval must be positive")
        return insert(due: lock.withLock { clock }.saturatingAdd(max(0, delayMs)), interval: interval, action: action)
    }

    /// Runs `action` when the clock reaches `time` (at once on the next advance if it is past).
    ///
    /// ```swift
    /// scheduler.schedule(at: 250) { input.send(value: "late") }
    /// ```
    ///
    /// - Parameters:
    ///   - time: The absolute virtual time.
    ///   - action: The work.
    /// - Returns: Disposing it cancels the action.
    @discardableResult
    public func schedule(at time: Int, _ action: @escaping @Sendable () -> Void) -> Disposable {
        insert(due: max(time, lock.withLock { clock }), interval: nil, action: action)
    }

    /// Moves the clock forward by `milliseconds`, running every action due on the way.
    ///
    /// `advance()` with no argument runs what is due now.
    ///
    /// - Parameter milliseconds: How far to move; must not be negative.
    public func advance(by milliseconds: Int = 0) {
        precondition(milliseconds >= 0, "virtual time cannot go back")
        advance(to: now.saturatingAdd(milliseconds))
    }

    /// Moves the clock to `time`, running every action due up to and including it.
    ///
    /// - Parameter time: The target time; must not be earlier than `now`.
    public func advance(to time: Int) {
        precondition(time >= now, "virtual time cannot go back (now \(now), asked for \(time))")
        while let action = popItem(dueBy: time) {
            action()
        }
        lock.withLock { clock = max(clock, time) }
    }

    /// Runs actions, moving the clock to each one's due time, until nothing is scheduled.
    ///
    /// A repeating action (an `interval`) never lets this finish: stop it first or use
    /// `advance(to:)`. After `runLimit` actions the test stops with a message.
    public func run() {
        var performed = 0
        while let action = popItem(dueBy: .max) {
            performed += 1
            precondition(performed <= runLimit, "TestScheduler.run() did not settle after \(runLimit) actions")
            action()
        }
    }

    private func insert(due: Int, interval: Int?, action: @escaping @Sendable () -> Void) -> Disposable {
        let job = Job(action)
        let lock = self.lock
        let disposable = AnyDisposable { lock.withLock { job.action = nil } }
        lock.withLock {
            let item = Item(due: due, sequence: nextSequence, interval: interval, job: job, disposable: disposable)
            nextSequence += 1
            enqueue(item)
        }
        return disposable
    }

    /// Inserts after every item due at the same time or earlier; call with the lock held.
    private func enqueue(_ item: Item) {
        var low = 0
        var high = items.count
        while low < high {
            let middle = (low + high) / 2
            if items[middle].due <= item.due { low = middle + 1 } else { high = middle }
        }
        items.insert(item, at: low)
    }

    /// Takes the earliest live item due by `time`, sets the clock to its due time, re-arms it
    /// if it repeats, and returns its action.
    private func popItem(dueBy time: Int) -> (@Sendable () -> Void)? {
        lock.withLock {
            while let first = items.first, first.due <= time {
                items.removeFirst()
                guard !first.disposable.isDisposed, let action = first.job.action else { continue }
                if first.due > clock || first.interval != nil { timersFired += 1 }
                clock = max(clock, first.due)
                let (nextDue, pastTheEnd) = first.due.addingReportingOverflow(first.interval ?? 0)
                if let interval = first.interval, !pastTheEnd {
                    // A repetition that would fall after `Int.max` never comes.
                    let next = Item(
                        due: nextDue, sequence: nextSequence, interval: interval,
                        job: first.job, disposable: first.disposable)
                    nextSequence += 1
                    enqueue(next)
                } else {
                    first.job.action = nil  // runs once: its disposable must not keep it
                }
                return action
            }
            return nil
        }
    }
}
