import Streams
/// Runs closures one at a time, in the order they were enqueued, on whichever thread finds it idle.
///
///     let serial = SerialQueue()
///     serial.run { state.apply(change) }   // from any thread; never overlaps another closure
///
/// **Threading**: any thread. A closure enqueued from inside a running closure runs after it, not inside it.
final class SerialQueue: Sendable {
    private struct State {
        var queue = FIFO<@Sendable () -> Void>()
        var running = false
    }

    private let state = Locked(State())

    /// Runs `work` now if idle, else after everything already enqueued.
    func run(_ work: @escaping @Sendable () -> Void) {
        let start: Bool = state.withLock { state in
            state.queue.push(work)
            guard !state.running else { return false }
            state.running = true
            return true
        }
        guard start else { return }
        while let next: @Sendable () -> Void = state.withLock({ state in
            if let next = state.queue.pop() { return next }
            state.running = false
            return nil
        }) {
            next()
        }
    }
}
