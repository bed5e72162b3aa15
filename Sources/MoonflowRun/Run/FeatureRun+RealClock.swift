import Foundation
import LuaKit
import MoonflowEvents
import MoonflowHost
import MoonflowLua
import Streams

/// The input on the real clock: a timed line waits for its time; at the end the run waits for its work.
extension FeatureRun {
    func runReal() {
        while let line = input.next() {
            let lineNumber = lock.withLock {
                linesRead += 1; return linesRead
            }
            guard let (at, action) = parse(line, lineNumber) else { continue }
            if let at {
                if let until = options.untilMs, at > until { waitIdle(until: until); return }
                let due = start.addingTimeInterval(Double(at) / 1000)
                if due > Date() { Thread.sleep(until: due) }
            }
            send(action, line: lineNumber)
            // What the action did without waiting for time (streams of values at hand,
            // `mf.compose` children's mutations) is reduced before the next line, in the
            // order the virtual clock reduces it. (Not past a stuck state.)
            // At the prompt, the next line is read at once: what a timer, a stream or a
            // service brings later is printed above the line being typed (`latest`,
            // debounce and `:restart` can be tried by hand while work is in flight).
            drainUnlessStuck()
        }
        if options.keepsRunning && !options.watch && input.isInteractive {
            FileHandle.standardError.write(Data("moonflow: the input ended; the inspector stays until Ctrl-C\n".utf8))
        }
        if options.watch || options.keepsRunning { waitForSignal() }
        waitIdle(until: options.untilMs)
    }

    /// Whether the feature has nothing queued or running (a stuck state counts as idle:
    /// nothing will come of it).
    var isIdle: Bool {
        let feature = self.feature!
        return (try? host.performUnlessStuck { feature.isIdle }) ?? true
    }

    /// `QueueScheduler.drain`, whose waits end when the state is stuck.
    func drainUnlessStuck() {
        let host = self.host!
        guard let scheduler = host.scheduler as? QueueScheduler else { return }
        var rounds = 0
        while scheduler.hasImmediateWork, rounds < 10_000, (try? host.performUnlessStuck {}) != nil { rounds += 1 }
    }

    /// Waits until the feature is idle, the clock reaches `until`, or `maxSeconds` pass.
    /// At the end of input, a wait longer than a second at a terminal says what it waits for.
    func waitIdle(until: Int?, maxSeconds: Double? = nil) {
        let limit = maxSeconds.map { Date().addingTimeInterval($0) }
        let announceAt = maxSeconds == nil && isatty(STDERR_FILENO) != 0 ? Date().addingTimeInterval(1) : nil
        var announced = false
        while true {
            if let until, now >= until { return }
            if let limit, Date() > limit { return }
            let idle = isIdle && host.bridge.pending.inFlight == 0
            if idle { return }
            if let announceAt, !announced, Date() > announceAt {
                announced = true
                let end =
                    until.map { "until the clock reaches \($0) ms" }
                    ?? "until it finishes; Ctrl-C stops the run, --until MS ends it at MS"
                FileHandle.standardError.write(
                    Data("moonflow: input ended; waiting for work in flight (\(inFlightSummary)) \(end)\n".utf8))
            }
            Thread.sleep(forTimeInterval: 0.002)
        }
    }
}
