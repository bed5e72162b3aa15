import Foundation
import LuaKit
import MoonflowEvents
import MoonflowHost
import MoonflowHostTools
import MoonflowLua
import Streams

/// The input's thread, watched for a stuck Lua state, and the rebuild that takes the run past one.
extension FeatureRun {
    /// Feeds the input to the feature on a thread of its own while this one watches for a
    /// stuck Lua state: a call that ran on past its time limit in code no hook reaches (a
    /// blocking C or Swift function). Then the feature is rebuilt from its source with its
    /// last state, in a new host, and the run goes on with the rest of the input. On the
    /// virtual clock the input's thread runs the Lua code itself and is stuck with it: a new
    /// one takes over. On the real clock it only waits on the state's queue, and its waits
    /// end when the state is stuck (`performUnlessStuck`): it goes on with the new host.
    func drive() {
        while true {
            let finished = DispatchSemaphore(value: 0)
            let generation = bindingLock.withLock { self.generation }
            // Weak: the run is let go as soon as it returns (the thread may take a moment to end).
            let driver = Thread { [weak self] in
                self?.feedInput(generation: generation)
                finished.signal()
            }
            driver.name = "moonflow input"
            driver.stackSize = 16 << 20  // Lua's C calls nest as deep as on the main thread
            driver.start()
            while true {
                if finished.wait(timeout: .now() + .milliseconds(20)) == .success { return }
                AbandonedStates.shared.release()  // what a stuck call left behind, once it returned
                // The host the run drives now: after going back in the debugger, a new one.
                guard bindingLock.withLock({ _host! }).isStuck else { continue }
                guard rebuildStuck() != nil else { return }
                if options.clock == .virtual { break }  // the stuck thread is left behind
            }
        }
    }

    /// The input, to its end, on the clock the options name.
    func feedInput(generation: Int) {
        var generation = generation
        switch options.clock {
        case .virtual:
            runVirtual(generation: generation)
            // The debugger went back: the plugin runs again from its load (FeatureRun+Travel).
            while travelPending {
                guard let next = rerunFromLoad() else { return }
                generation = next
                runVirtual(generation: generation)
            }
        case .real: runReal()
        }
        if isCurrent(generation) { reportStoppedAtUntil() }
    }

    /// Leaves the stuck host behind and loads the plugin again in a new one, with the state
    /// the feature last had. Returns the new host, or nil when that failed too (the run ends).
    func rebuildStuck() -> FeatureHost? {
        let (stuckHost, stuckFeature, oldObservation) = bindingLock.withLock { (_host!, _feature!, observation) }
        let kept = stuckFeature.state
        let clock = stuckHost.testScheduler?.now
        let generation = lock.withLock {
            self.generation += 1; return self.generation
        }
        // Kept until the stuck call returns: freeing the state would touch it under that call.
        let stuckLua = stuckHost.lua
        let room = AbandonedStates.shared.keep(
            [stuckHost, stuckFeature as AnyObject] + (oldObservation.map { [$0 as AnyObject] } ?? []),
            while: { stuckLua.isInCall })
        let limit = options.timeLimitMs.map { "its time limit of \($0) ms" } ?? "its time limit"
        guard room else {
            emit(
                .error(
                    message:
                        "a call of \(stuckFeature.name) ran on past \(limit) in code that cannot be interrupted (a blocking C or Swift function such as os.execute or io.read), and \(AbandonedStates.shared.limit) Lua states stuck so are left behind now, the most a run keeps (each holds its memory until its call returns): the run ends",
                    location: nil))
            return nil
        }
        emit(
            .error(
                message:
                    "a call of \(stuckFeature.name) ran on past \(limit) in code that cannot be interrupted (a blocking C or Swift function such as os.execute or io.read): its Lua state is left behind (freed once the call returns), and the feature is loaded again from \(options.path) with its last state",
                location: nil))
        // Loading runs the plugin's code, which may block as well: on a thread of its own.
        let outcome = Locked<Result<(FeatureHost, RunningFeature), any Error>?>(nil)
        let building = Locked<FeatureHost?>(nil)
        let path = options.path
        let ended = StuckWatch.run(isStuck: { building.withLock { $0 }?.isStuck == true }) { [weak self] in
            let built = Result {
                guard let self else { throw HostError("the run is over") }
                let host = try self.makeHost(generation: generation)
                building.withLock { $0 = host }
                if let clock { host.advance(to: clock) }
                return (host, try host.load(path, initial: kept))
            }
            outcome.withLock { $0 = built }
        }
        if !ended {
            if let stuck = building.withLock({ $0 }) {
                let stuckLua = stuck.lua
                AbandonedStates.shared.keep([stuck], while: { stuckLua.isInCall })
            }
            emit(
                .error(
                    message:
                        "loading \(options.path) again got stuck as well (its code blocks as it loads); the run ends",
                    location: nil))
            return nil
        }
        let host: FeatureHost, feature: RunningFeature
        do { (host, feature) = try outcome.withLock { $0 }!.get() } catch {
            let (message, location) = LuaErrorReport.describe(error, fallback: nil)
            emit(
                .error(
                    message: "loading \(options.path) again failed, and the run ends: \(message)", location: location))
            return nil
        }
        adopt(host, feature, generation: generation)
        if watcher != nil {
            // The old watcher's thread may be waiting on the stuck state (a reload): a new one watches.
            watcher?.stop()
            do { try startWatching() } catch { emit(.error(message: "\(error)", location: nil)) }
        }
        host.perform { feature.start() }
        return host
    }

    /// `--until` ended the run: say what was still in flight, if anything, so a
    /// run that stopped early does not look finished.
    func reportStoppedAtUntil() {
        guard let until = options.untilMs, !options.watch, !isIdle else { return }
        FileHandle.standardError.write(
            Data("moonflow: --until \(until) ended the run at \(now) ms with work in flight: \(inFlightSummary)\n".utf8)
        )
    }
}
