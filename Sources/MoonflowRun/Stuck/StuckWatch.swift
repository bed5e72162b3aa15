import Foundation

/// Lua code on a thread of its own, waited for until it ends or its state is stuck (a call
/// the time limit cannot stop: `LuaState.isStuck`), whichever comes first. A stuck thread
/// is left behind, and the caller goes on: what `run`, `test` and `exec` do with code that
/// blocks in C or Swift.
///
///     let ended = StuckWatch.run(isStuck: { host.isStuck }) { try? host.lua.call(f, []) }
///     if !ended { report("stuck") }
package enum StuckWatch {
    /// How often the waiting thread looks at `isStuck`.
    package static let interval: DispatchTimeInterval = .milliseconds(20)

    /// Runs `body` on a new thread with a large stack (a Lua state may run as deep as on
    /// the main thread) and waits for it.
    /// - Returns: true when `body` ended; false when `isStuck` turned true first (`body`
    ///   is left running).
    ///   What `body` holds (a host and its Lua state) is released on its thread before
    ///   `run` returns true, so the caller's release of its own reference is the last one:
    ///   a process that exits next does not exit while that thread is still tearing it down.
    package static func run(isStuck: () -> Bool, _ body: @escaping @Sendable () -> Void) -> Bool {
        let finished = DispatchSemaphore(value: 0)
        let handoff = Handoff(body)
        let thread = Thread {
            handoff.run()
            finished.signal()
        }
        thread.stackSize = 16 << 20
        thread.start()
        while finished.wait(timeout: .now() + interval) == .timedOut {
            if isStuck() { return false }
            AbandonedStates.shared.release()  // what earlier stuck calls left behind, once they returned
        }
        return true
    }
}

/// The body a `StuckWatch` thread runs, dropped as soon as it returns (the thread's own
/// closure would keep it, and what it captured, until the thread exits). Touched only by
/// that thread once it starts.
private final class Handoff: @unchecked Sendable {
    private var body: (@Sendable () -> Void)?

    init(_ body: @escaping @Sendable () -> Void) { self.body = body }

    func run() {
        body?()
        body = nil
    }
}
