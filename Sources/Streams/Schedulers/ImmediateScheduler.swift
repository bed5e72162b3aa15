import Foundation

/// A scheduler that runs actions synchronously on the calling thread.
///
/// Delayed actions block the calling thread for the delay (so use it for delays only in scripts
/// and tools); repeating actions are not supported, because nothing could stop them.
///
/// ```swift
/// ImmediateScheduler.shared.schedule { print("runs before schedule returns") }
/// ```
public final class ImmediateScheduler: Scheduler {
    /// A shared instance; the scheduler has no state besides its start time.
    public static let shared = ImmediateScheduler()

    private let start = DispatchTime.now().uptimeNanoseconds

    /// Creates an immediate scheduler whose `now` counts from this moment.
    public init() {}

    public var now: Int {
        Int((DispatchTime.now().uptimeNanoseconds - start) / 1_000_000)
    }

    @discardableResult
    public func schedule(_ action: @escaping @Sendable () -> Void) -> Disposable {
        action()
        return AnyDisposable()
    }

    @discardableResult
    public func schedule(after delayMs: Int, _ action: @escaping @Sendable () -> Void) -> Disposable {
        if delayMs > 0 { Thread.sleep(forTimeInterval: Double(delayMs) / 1000) }
        action()
        return AnyDisposable()
    }

    /// Not supported: a synchronous scheduler could never return control to stop the repetition.
    @discardableResult
    public func schedule(after delayMs: Int, interval: Int, _ action: @escaping @Sendable () -> Void) -> Disposable {
        preconditionFailure("ImmediateScheduler cannot repeat actions; use QueueScheduler or TestScheduler")
    }
}
