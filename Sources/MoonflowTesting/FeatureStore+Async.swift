import Foundation
import MoonflowHost
import MoonflowHostTools
import MoonflowLua
import Streams

/// A store's waits without a blocked thread: what `TypedFeatureStore`'s async steps use.
///
/// The blocking `settle` (`FeatureHost.settle`) holds its thread on a condition until the
/// services in flight answer. A Swift service runs on the cooperative pool, so a test that
/// blocks a pool thread that way can starve the service it waits for: under Swift Testing's
/// parallel run on 2 cores every pool thread ended up waiting and no service ran. Here the
/// task suspends instead (`PendingWork.signalled(after:)`), resumed when a result is handed
/// back or a call ends, and runs the due work on the caller's executor when it resumes.
extension FeatureStore {
    /// Runs what is due now and, while services are in flight on this store's clock, suspends
    /// until one answers or ends, then runs what that made due; as `FeatureHost.settle`, but
    /// holding no thread. Stops waiting after `timeout` (a service that never answers fails
    /// the step that waited for it) or when the task is cancelled.
    nonisolated(nonsending) package func settled(timeout: Duration) async {
        let bridge = host.bridge
        let pending = bridge.pending
        let clock = self.clock
        let lua = host.lua
        let runDue = {
            self.running {
                bridge.releaseReentries(on: clock)
                clock.advance(by: 0)
            }
        }
        runDue()
        let deadline = ContinuousClock.now.advanced(by: timeout)
        var alarm: Task<Void, Never>?
        defer { alarm?.cancel() }
        while pending.inFlight(on: clock) > 0 && !lua.testDeadlinePassed && !Task.isCancelled
            && ContinuousClock.now < deadline
        {
            // Read before looking, so a wake-up that comes while looking is not missed.
            let seen = pending.signalCount
            let ready =
                bridge.hasArrivedReentries(on: clock) || (clock.nextDueTime.map { $0 <= clock.now } ?? false)
                || pending.inFlight(on: clock) == 0
            if !ready {
                // One timer for the whole settle, started only when it has to wait.
                if alarm == nil {
                    alarm = Task.detached {
                        guard (try? await Task.sleep(until: deadline, clock: .continuous)) != nil else { return }
                        pending.poke()
                    }
                }
                await pending.signalled(after: seen)
            }
            runDue()
        }
    }

    /// Moves the clock `ms` on, settling (without blocking) at every due time on the way: `advance(by:)`.
    nonisolated(nonsending) package func advanced(by ms: Int, timeout: Duration) async {
        let clock = self.clock
        let target = clock.now.saturatingAdd(max(0, ms))
        while !host.lua.testDeadlinePassed {
            await settled(timeout: timeout)
            guard let next = clock.nextDueTime, next <= target else { break }
            running { clock.advance(to: next) }
        }
        if target > clock.now { running { clock.advance(to: target) } }
        await settled(timeout: timeout)
    }

    /// Runs a synchronous step after waiting for services when `settle` says so (when nothing
    /// of the kind the step asserts has arrived yet, as the blocking step would wait); the
    /// step itself then never waits.
    nonisolated(nonsending) package func step<R>(
        settling settle: Bool, timeout: Duration, _ body: () throws -> R
    ) async rethrows -> R {
        if settle { await settled(timeout: timeout) }
        return try withoutWaiting(body)
    }
}
