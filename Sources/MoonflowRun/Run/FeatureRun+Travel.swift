import Foundation
import LuaKit
import MoonflowEvents
import MoonflowHost
import MoonflowLua

/// Going back in a virtual-clock run under the debugger (`stepBack`, `reverseContinue`): the
/// run keeps every input line it has read, and `travel()` abandons the Lua state the debugger
/// stopped in and runs the plugin again from its load, in a new host, with those lines (the
/// debugger stops the re-run where it went back to). What the re-run prints up to the point
/// the run had printed before is not printed again, so the output is the same as a run's
/// that never went back; past it, the run goes on reading its input.
extension FeatureRun {
    /// Called by the debugger on the stopped Lua thread, before its stack unwinds: the run
    /// from here on is another generation (nothing the abandoned state still sends is printed),
    /// and the input's thread runs the plugin again once the stack is unwound.
    package func travel() {
        lock.withLock {
            generation += 1
            travelState.printed = max(travelState.printed, travelState.emitted)
            travelState.pending = true
        }
    }

    /// The inputs a repeatable run keeps to go back, unless `--debug-history` says otherwise.
    package static let defaultTravelHistory = 100_000

    /// The next input line: the ones read before first (a re-run), then the input's, kept
    /// while the history holds (`Options.travelHistory`).
    func nextInputLine() -> String? {
        guard options.repeatable, !travelState.dropped else { return input.next() }
        if travelState.next < travelState.lines.count {
            defer { travelState.next += 1 }
            return travelState.lines[travelState.next]
        }
        guard let line = input.next() else { return nil }
        travelState.lines.append(line)
        travelState.next += 1
        if travelState.lines.count + travelCalls.count > options.travelHistory {
            // The load is the only point a re-run can start from, so nothing older can be let go
            // alone: all of it goes, and the run cannot go back from here on.
            travelState.dropped = true
            let read = travelState.lines.count
            travelState.lines = []
            travelState.next = 0
            travelCalls.forget()
            options.historyDropped?(read)
        }
        return line
    }

    /// Whether an event of the current generation is printed: not while a re-run repeats
    /// what the run printed before it went back. Under `lock`.
    func printsAgain() -> Bool {
        guard options.repeatable else { return true }
        travelState.emitted += 1
        return travelState.emitted > travelState.printed
    }

    /// Runs the plugin again from its load after `travel()`, on the input's thread once the
    /// abandoned state's stack is unwound; returns the new generation, or nil when the load
    /// failed (reported; the run ends).
    func rerunFromLoad() -> Int? {
        let generation = lock.withLock {
            travelState.pending = false
            travelState.emitted = 0
            travelState.actionsSent = 0
            callCounts = [:]
            brokenInvariants = []
            linesRead = 0
            latestTimedLine = 0
            return self.generation
        }
        travelState.next = 0
        observation?.dispose()
        do {
            let host = try makeHost(generation: generation)
            let feature = try host.load(options.path)
            adopt(host, feature, generation: generation)
            host.perform { feature.start() }
        } catch {
            let (message, location) = LuaErrorReport.describe(error, fallback: nil)
            emit(.error(message: "loading \(options.path) again to go back failed: \(message)", location: location))
            return nil
        }
        return generation
    }

    var travelPending: Bool { lock.withLock { travelState.pending } }

    /// Makes `host` and `feature` the ones the run drives from now on (a generation after a
    /// stuck state or a way back), their events heard as that generation's.
    func adopt(_ host: FeatureHost, _ feature: RunningFeature, generation: Int) {
        let listener = host.perform {
            feature.outlet.add { [weak self] event in self?.heard(event, generation: generation) }
        }
        bindingLock.withLock {
            _host = host
            _feature = feature
            observation = listener
        }
    }
}

/// What `moonflow run` keeps to go back (`FeatureRun.travel()`).
struct TravelState {
    /// Every input line read so far, and the next one a re-run reads (the input thread's).
    var lines: [String] = []
    var next = 0
    /// Events the current generation emitted, and the most any printed (under the run's lock).
    var emitted = 0
    var printed = 0
    /// `travel()` was called: the input's thread runs the plugin again.
    var pending = false
    /// Actions sent by the current generation (under the run's lock).
    var actionsSent = 0
    /// The history passed `Options.travelHistory` and was let go: the run no longer keeps it.
    var dropped = false
}
