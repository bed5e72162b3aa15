import Dispatch

/// A scheduler backed by a serial `DispatchQueue`: actions run one at a time, in order, off the
/// calling thread; `now` counts milliseconds since the scheduler was created.
///
/// ```swift
/// let state = QueueScheduler(label: "moonflow.state")
/// state.schedule { state.assertOnQueue(); print("on the state queue") }
/// ```
public final class QueueScheduler: Scheduler {
    /// The serial queue actions run on.
    public let queue: DispatchQueue

    private let start = DispatchTime.now()

    /// Creates a scheduler with a new serial queue.
    ///
    /// - Parameters:
    ///   - label: The queue's label, shown in debuggers and crash logs.
    ///   - qos: The queue's quality of service.
    public init(label: String = "moonflow.queue-scheduler", qos: DispatchQoS = .default) {
        queue = DispatchQueue(label: label, qos: qos)
    }

    /// Creates a scheduler on an existing queue.
    ///
    /// - Parameter queue: Must be serial; a concurrent queue breaks the ordering promise.
    public init(queue: DispatchQueue) {
        self.queue = queue
    }

    public var now: Int {
        Int((DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1_000_000)
    }

    /// Stops the program in debug builds unless called on this scheduler's queue.
    public func assertOnQueue() {
        dispatchPrecondition(condition: .onQueue(queue))
    }

    /// Actions scheduled to run at once that have not run yet.
    private let immediate = Locked(0)

    @discardableResult
    public func schedule(_ action: @escaping @Sendable () -> Void) -> Disposable {
        let disposable = AnyDisposable()
        immediate.withLock { $0 += 1 }
        queue.async { [immediate] in
            defer { immediate.withLock { $0 -= 1 } }
            if !disposable.isDisposed { action() }
        }
        return disposable
    }

    /// Whether work scheduled to run at once is still queued (what `drain` waits for).
    public var hasImmediateWork: Bool { immediate.withLock { $0 } != 0 }

    /// Waits, off the queue, until every action scheduled to run at once has run,
    /// and what those scheduled at once in turn: the work an input caused without
    /// waiting for time to pass. Stops after `rounds` rounds (a chain that goes on
    /// rescheduling itself); timers are not waited for.
    ///
    ///     try feature.send(action)   // its stream's values are scheduled on the queue
    ///     scheduler.drain()          // ...and reduced by now
    public func drain(rounds: Int = 10_000) {
        for _ in 0..<rounds {
            if immediate.withLock({ $0 }) == 0 { return }
            queue.sync {}
        }
    }

    /// A disposed timer is gone at once, not at its deadline: its action and what that holds (a
    /// disposed feature's stream, and through it the feature), and the dispatch timer itself,
    /// are freed when it is cancelled, however far off the deadline is.
    @discardableResult
    public func schedule(after delayMs: Int, _ action: @escaping @Sendable () -> Void) -> Disposable {
        let held = HeldAction(action)
        let timer = OneShotTimer(queue: queue, deadline: .now() + .milliseconds(max(0, delayMs))) {
            held.take()?()
        }
        return AnyDisposable {
            held.drop()
            timer.cancel()
        }
    }

    @discardableResult
    public func schedule(after delayMs: Int, interval: Int, _ action: @escaping @Sendable () -> Void) -> Disposable {
        precondition(interval > 0, "interval must be positive")
        let repetition = Repetition(
            queue: queue, first: .now() + .milliseconds(max(0, delayMs)), interval: interval, action: action)
        repetition.arm(tick: 0)
        return repetition.disposable
    }
}

/// An action a timer runs once, unless it is dropped first; dropping it releases it then.
private final class HeldAction: Sendable {
    /// In a struct: a closure that is itself a `Locked`'s state (or an optional of one) is
    /// re-wrapped in a conversion thunk at each `withLock` (LuaBridge's `ExecutorHooks` say so).
    private struct Slot {
        var action: (@Sendable () -> Void)?
    }
    private let slot: Locked<Slot>

    init(_ action: @escaping @Sendable () -> Void) { slot = Locked(Slot(action: action)) }

    /// The action, once: a timer that fires takes it (nil when it was dropped).
    func take() -> (@Sendable () -> Void)? {
        slot.withLock { slot in
            defer { slot.action = nil }
            return slot.action
        }
    }

    /// The action, for each run of a repetition; nil once dropped.
    var current: (@Sendable () -> Void)? { slot.withLock { $0.action } }

    func drop() { _ = take() }
}

/// A dispatch timer that runs its handler once at `deadline`, on `queue`; `cancel` frees it and
/// the handler at once (`asyncAfter`'s timer would stay until its deadline).
private final class OneShotTimer: @unchecked Sendable {
    private let source: DispatchSourceTimer

    init(queue: DispatchQueue, deadline: DispatchTime, _ handler: @escaping @Sendable () -> Void) {
        let source = DispatchSource.makeTimerSource(queue: queue)
        self.source = source
        // The handler holds the source until it runs or is cancelled: cancelling releases both.
        source.setEventHandler {
            source.cancel()
            handler()
        }
        source.schedule(deadline: deadline)
        source.activate()
    }

    func cancel() { source.cancel() }
}

/// One repeating action: each run is scheduled from the first deadline plus a whole number of
/// periods, so the schedule does not drift with the time the actions take. Disposing of it
/// lets go of the action and cancels the timer of the next run at once.
private final class Repetition: Sendable {
    let queue: DispatchQueue
    let first: DispatchTime
    let interval: Int
    private let action: HeldAction
    /// The timer of the next run; nil once disposed.
    private let next = Locked(NextRun())
    let disposable: AnyDisposable

    private struct NextRun {
        var timer: OneShotTimer?
        var stopped = false
    }

    init(queue: DispatchQueue, first: DispatchTime, interval: Int, action: @escaping @Sendable () -> Void) {
        self.queue = queue
        self.first = first
        self.interval = interval
        let held = HeldAction(action)
        self.action = held
        let next = self.next
        disposable = AnyDisposable {
            held.drop()
            let timer = next.withLock { next in
                next.stopped = true
                defer { next.timer = nil }
                return next.timer
            }
            timer?.cancel()
        }
    }

    func arm(tick: Int) {
        let timer = OneShotTimer(queue: queue, deadline: first + .milliseconds(tick * interval)) { [self] in
            guard let action = action.current else { return }
            action()
            arm(tick: tick + 1)
        }
        let armed = next.withLock { next in
            guard !next.stopped else { return false }
            next.timer = timer
            return true
        }
        if !armed { timer.cancel() }
    }
}
