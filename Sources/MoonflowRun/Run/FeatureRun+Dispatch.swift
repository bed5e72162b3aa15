import Foundation
import LuaKit
import MoonflowEvents
import MoonflowHost
import MoonflowHostTools
import MoonflowLua
import Streams

extension FeatureRun {
    /// Sends `action` to the feature, telling the observers first.
    /// - Throws: the validation error; nothing is sent.
    ///
    /// An action that finds the state stuck before it started waits for the rebuilt
    /// feature and goes to it (one that got stuck itself is not sent again).
    func dispatch(_ action: LuaValue) throws {
        let started = Locked(false)
        let deadline = Date().addingTimeInterval(10)
        while true {
            let (host, feature) = bindingLock.withLock { (_host!, _feature!) }
            let sent = try host.performUnlessStuck { [self] in
                started.withLock { $0 = true }
                if !options.observers.isEmpty {
                    // A refused action is not an input: a recording or the inspector's re-run
                    // would send it again.
                    try (feature as? LuaFeature)?.check(action)
                    let t = now
                    lock.withLock { for observer in options.observers { observer.input(action, t: t) } }
                }
                if let starting = options.actionStarting {
                    starting(
                        lock.withLock {
                            travelState.actionsSent += 1; return travelState.actionsSent
                        })
                }
                try feature.send(action)
                return true
            }
            if sent != nil || started.withLock({ $0 }) { return }
            // Stuck before it started: the run rebuilds the feature in a moment.
            while self.host === host {
                guard Date() < deadline else { throw FeatureError.stuck(feature: feature.name, action: action) }
                Thread.sleep(forTimeInterval: 0.005)
            }
        }
    }

    /// The run as its observers see it: actions from another thread (the inspector's page).
    struct Dispatcher: RunDispatcher {
        /// Weak: the observers keep their dispatcher, and the run keeps its observers.
        weak var run: FeatureRun?
        func dispatch(_ action: LuaValue) throws {
            guard let run else { throw HostError("the run is over: nothing takes actions any more") }
            guard run.options.clock == .real else {
                throw HostError(
                    "sending from elsewhere needs the real clock: the virtual one moves only with the input")
            }
            try run.dispatch(action)
        }
        var inFlight: [FeatureFlight] {
            guard let run, run.options.clock == .real else { return [] }
            return run.host.perform { run.feature.inFlight }
        }
        func restart() throws {
            guard let run else { throw HostError("the run is over: there is nothing to restart") }
            guard run.options.clock == .real else {
                throw HostError(
                    "restarting from elsewhere needs the real clock: the virtual one moves only with the input")
            }
            try run.host.restart(run.feature)
        }
        func openInDebugger(inputLines: [String], answers: [String], action: Int) throws {
            guard let run else { throw HostError("the run is over: there is nothing to debug") }
            guard let open = run.options.openInDebugger else { throw HostError.noDebugger }
            try open(inputLines, answers, action)
        }
    }
}
