import Foundation
import LuaKit
import MoonflowDebug
import MoonflowEvents
import MoonflowHost
import MoonflowLua
import Streams

extension FeatureRun {
    /// A past step of a run opened in the debugger (the inspector's `debug`): the feature at
    /// `path` run again in a host of its own, on the virtual clock, on `inputLines` (the run's
    /// actions up to the step's), each service or repository call answered by `answers` as the
    /// run's was (as `rerun` does), with the run's `seed`. As the action at `action` (from 0)
    /// is about to be sent, `open` is called with the copy's host on its Lua thread: the
    /// debugger serves its state from there and stops at the first line of a plugin's file the
    /// action runs (its `handle`), with the state as it was before it. The copy prints nothing
    /// and ends after that action, once the editor lets it go on; the live run is not touched.
    ///
    /// Returns once the copy reached the action, on a thread of its own from then on.
    /// - Throws: `HostError` when the copy ended before it (the code changed since, say).
    package static func openStep(
        path: String, seed: Int64?, inputLines: [String], answers: [String], action: Int,
        open: @escaping @Sendable (FeatureHost) -> Void
    ) throws {
        guard action >= 0, action < inputLines.count else {
            throw HostError("the step's action is number \(action + 1), and the run sent \(inputLines.count) up to it")
        }
        var (options, input) = again(path: path, inputLines: inputLines, answers: answers)
        options.seed = seed
        let host = Locked<FeatureHost?>(nil)
        let reached = DispatchSemaphore(value: 0)
        let outcome = Locked<Bool?>(nil)
        options.prepareHost = { made, _ in host.withLock { $0 = made } }
        options.actionStarting = { sent in
            // `sent` counts from 1; on the Lua state's thread, between calls.
            guard sent == action + 1, let made = host.withLock({ $0 }) else { return }
            open(made)
            outcome.withLock { $0 = true }
            reached.signal()
        }
        let run = FeatureRun(options: options, input: input, write: nil)
        let copy = Thread {
            _ = run.run()
            outcome.withLock { if $0 == nil { $0 = false } }
            reached.signal()
        }
        copy.name = "moonflow: step \(action + 1) in the debugger"
        copy.start()
        reached.wait()
        guard outcome.withLock({ $0 }) == true else {
            throw HostError(
                "the copy of the run ended before its action \(action + 1) (the plugin's code changed since, or it failed to load); re-run the actions from the inspector to see how they differ"
            )
        }
    }
}

extension DebugServer {
    /// For `FeatureRun.Options.openInDebugger` (`moonflow run --inspect --debug`): a step the
    /// inspector's page opens runs again in a copy of the feature at `path` (`openStep`),
    /// which this debugger serves from that step's action on and stops at its `handle`.
    /// - Throws: when no editor is attached, saying to attach one first.
    package func opensSteps(of path: String, seed: Int64?) -> @Sendable ([String], [String], Int) throws -> Void {
        { [controller, address] lines, answers, action in
            guard controller.hasEditor else {
                throw HostError(
                    "no editor is attached to the debugger on \(address); attach one (with the token it printed), then open the step again"
                )
            }
            try FeatureRun.openStep(path: path, seed: seed, inputLines: lines, answers: answers, action: action) {
                host in
                controller.open(
                    copy: host.lua,
                    at:
                        "action \(action + 1) of the run, in a copy of it on the virtual clock (opened from the inspector)"
                )
            }
        }
    }
}
