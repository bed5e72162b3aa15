import Foundation
import LuaKit
import MoonflowEvents
import MoonflowHost
import MoonflowHostTools
import MoonflowLua

/// What the run prints and tells its observers: each event of the feature, and the input's own errors.
extension FeatureRun {
    func emit(_ event: FeatureEvent, asInput: Bool = false, generation from: Int? = nil) {
        var event = event
        if case .error(let message, let location) = event {
            event = .error(message: FlagHints.add(to: message), location: location)
        }
        lock.lock(); defer { lock.unlock() }
        if let from, from != generation { return }  // a stuck state's, left behind
        // A replay's recorded answers wait for their action, printed again or not.
        if case .action = event { replayGate?.actionHandled() }
        if !printsAgain() { return }  // printed before the debugger went back
        if case .error = event, !(asInput && input.isInteractive) { failed = true }
        // Mutation and state events come only from the feature's own delivery, on the state
        // executor, where the composite's source is set; input errors come from this thread.
        var from: String?
        switch event {
        case .mutation, .state: from = (feature as? LuaComposite)?.sourceOfCurrentEvent
        default: from = nil
        }
        var changes: [StateChange]?
        var stateJSON: (() throws -> [UInt8])?
        if case .state = event, let single = feature as? LuaFeature {
            changes = single.deliveredChanges
            stateJSON = single.stateJSON
            // The code's own, after a reload too: a declared list's first item is an `add`.
            if options.statePatches { printer.declaredState = single.definition.declaredState }
        }
        write?(printer.render(event, t: now, from: from, changes: changes, stateJSON: stateJSON, asInput: asInput))
        if case .invariant = event { failed = true }
        // A bad input line is the input's, not the feature's: a recording or the inspector
        // that kept it would expect it again where nothing was sent.
        if !options.observers.isEmpty && !asInput {
            // One cast for both: a feature the host made is a bridged one.
            let bridged = feature as? BridgedFeature
            let cause = bridged?.eventCause
            let causeID = bridged?.eventCauseID
            for observer in options.observers {
                observer.observe(event, t: now, cause: cause, causeID: causeID, from: from)
            }
        }
    }

    /// A service or repository call the feature made: a `call` event with its number.
    func called(_ service: String, generation: Int) {
        let call: Int = lock.withLock {
            callCounts[service, default: 0] += 1
            return callCounts[service]!
        }
        emit(.call(service: service, call: call), generation: generation)
    }

    /// A bad input line. At the prompt a typo is not a failure of the session (its exit
    /// status stays 0); in piped input it is. Printed at the level of an action, not
    /// under the one before it.
    func inputError(_ message: String, line: Int) {
        let event = FeatureEvent.error(message: message, location: "\(input.name):\(line)")
        emit(event, asInput: true)
    }
}
