import Foundation

/// A scheduler on the main thread, for state that a UI reads. Called on the main thread, an
/// action runs at once, before `schedule` returns; an action scheduled while another runs there
/// waits for it and runs next, in order (the stack does not grow). Called from any other thread,
/// the action runs on the main queue's next turn. Timers run on the main queue in real time.
///
/// ```swift
/// var done = false
/// MainScheduler.shared.schedule { done = true }   // on the main thread: done is true now
/// MainScheduler.shared.schedule(after: 300) { print("300 ms later, on the main thread") }
/// ```
public final class MainScheduler: SlicedScheduler, @unchecked Sendable {
    /// The one main scheduler (there is one main thread).
    public static let shared = MainScheduler()

    /// Timers, and actions scheduled from other threads.
    private let queue = QueueScheduler(queue: .main)
    /// Touched on the main actor's executor only (`isCurrent`): whether an action runs there
    /// now, and what waits for it.
    private var running = false
    private var waiting: [(AnyDisposable, @Sendable () -> Void)] = []

    private init() {}

    /// Whether the caller runs on the main actor's executor: the main thread (a plain `main`,
    /// the run loop), or whatever thread drains the main queue now. A Swift `async` main
    /// parks the main thread in `dispatchMain()` on Linux, and the main actor resumes on
    /// another thread: asking the thread would say no there, and a `DispatchQueue.main.sync`
    /// from it would trap. The main queue carries a mark that says so wherever it runs.
    package static var isCurrent: Bool { Thread.isMainThread || DispatchQueue.getSpecific(key: mainQueueMark) == true }

    /// Set on the main queue once, before the first question.
    private static let mainQueueMark: DispatchSpecificKey<Bool> = {
        let key = DispatchSpecificKey<Bool>()
        DispatchQueue.main.setSpecific(key: key, value: true)
        return key
    }()

    public var now: Int { queue.now }

    /// A drain on the main thread lets the run loop in after this long: a UI keeps drawing
    /// while another thread sends faster than the main thread reduces.
    public var drainSliceNanoseconds: UInt64 { 4_000_000 }

    /// Runs `action` on a later turn of the main queue, never inline.
    @discardableResult
    public func scheduleLater(_ action: @escaping @Sendable () -> Void) -> Disposable {
        queue.schedule(action)
    }

    @discardableResult
    public func schedule(_ action: @escaping @Sendable () -> Void) -> Disposable {
        guard MainScheduler.isCurrent else { return queue.schedule(action) }
        let disposable = AnyDisposable()
        waiting.append((disposable, action))
        guard !running else { return disposable }
        running = true
        defer { running = false }
        var next = 0
        while next < waiting.count {
            let (cancelled, run) = waiting[next]
            next += 1
            if !cancelled.isDisposed { run() }
        }
        waiting.removeAll(keepingCapacity: true)
        return disposable
    }

    @discardableResult
    public func schedule(after delayMs: Int, _ action: @escaping @Sendable () -> Void) -> Disposable {
        queue.schedule(after: delayMs, action)
    }

    @discardableResult
    public func schedule(after delayMs: Int, interval: Int, _ action: @escaping @Sendable () -> Void) -> Disposable {
        queue.schedule(after: delayMs, interval: interval, action)
    }
}
