import Foundation
import LuaKit
import MoonflowEvents
import MoonflowHost
import MoonflowHostTools
import MoonflowLua

/// The input on the virtual clock: time moves only with the `at` of the lines (and `:advance`).
extension FeatureRun {
    /// On the thread that reads the input, which runs the Lua code too; it stops at once
    /// when a stuck state was left behind (`generation` is no longer the run's).
    func runVirtual(generation: Int) {
        let host = self.host!
        let test = host.testScheduler!
        host.settle()
        while isCurrent(generation), let line = nextInputLine() {
            let lineNumber = lock.withLock {
                linesRead += 1; return linesRead
            }
            guard let (at, action) = parse(line, lineNumber) else { continue }
            if let at {
                if let until = options.untilMs, at > until { host.advance(to: until); return }
                if at > test.now { host.advance(to: at) }
            }
            send(action, line: lineNumber)
            host.settle()
        }
        // Input is exhausted: run until nothing is scheduled or in flight.
        if isCurrent(generation), !host.runUntilIdle(until: options.untilMs) { finishVirtual() }
    }

    /// The end of a virtual-clock run once nothing is scheduled: with work still in
    /// flight (an `mf.never()`, a stream waiting on nothing) the clock runs on to
    /// `--until`, as the real clock would wait; without `--until` nothing can move it.
    func finishVirtual() {
        guard !isIdle else { return }
        if let until = options.untilMs {
            host.advance(to: until)
        } else {
            FileHandle.standardError.write(
                Data(
                    "moonflow: the run ends at \(now) ms with work in flight that nothing scheduled will finish (\(inFlightSummary)); pass --until MS to run the clock on to MS\n"
                        .utf8))
        }
    }
}
