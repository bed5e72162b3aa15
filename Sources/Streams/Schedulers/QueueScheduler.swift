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

    @discardableResult
    public func schedule(after delayMs: Int, _ action: @escaping @Sendable () -> Void) -> Disposable {
        let disposable = AnyDisposable()
        queue.asyncAfter(deadline: .now() + .milliseconds(max(0, delayMs))) {
            if !disposable.isDisposed { action() }
        }
        return disposable
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

/// One repeating action: each run is scheduled from the first deadline plus a whole number of
/// periods, so the schedule does not drift with the time the actions take.
private final class Repetition: Sendable {
    let queue: DispatchQueue
    let first: DispatchTime
    let interval: Int
    let action: @Sendable () -> Void
    let disposable = AnyDisposable()

    init(queue: DispatchQueue, first: DispatchTime, interval: Int, action: @escaping @Sendable () -> Void) {
        self.queue = queue
        self.first = first
        self.interval = interval
        self.action = action
    }

    func arm(tick: Int) {
        queue.asyncAfter(deadline: first + .milliseconds(tick * interval)) { [self] in
            guard !disposable.isDisposed else { return }
            action()
            arm(tick: tick + 1)
        }
    }
}
