import Foundation
import LuaKit
import MoonflowEvents
import MoonflowHost
import MoonflowHostTools
import MoonflowLua
import Streams

extension FeatureRun {
    /// The feature at `path` run again, as its code is now, on these input lines
    /// (`{"at":T,"send":{...}}`): on the virtual clock; every state it gives, in order. What
    /// the inspector's `rerun` and `toggle` compare with the run they watch. `answers`, the
    /// run's `service` lines, answer each service or repository call as it was answered, at
    /// the point its answer arrived (as `moonflow replay` does), so code that did not change
    /// gives the same states; without them the calls run again, declared repositories fresh
    /// in memory. The states are taken from the feature's outlet as it delivers them
    /// (`StatesSeen`); the run prints nothing.
    @Sendable package static func rerun(path: String, inputLines: [String], answers: [String]) -> [LuaValue] {
        var (options, input) = again(path: path, inputLines: inputLines, answers: answers)
        let states = StatesSeen()
        options.observers.append(states)
        _ = FeatureRun(options: options, input: input, write: nil).run()
        return states.all
    }

    /// The options and input of a run of the feature at `path` again on these input lines, on
    /// the virtual clock, printing nothing: each service or repository call answered by
    /// `answers` (the run's `service` lines) as it was, at the point its answer arrived; with
    /// none the calls run again, declared repositories fresh in memory.
    static func again(path: String, inputLines: [String], answers: [String]) -> (Options, InputSource) {
        var options = FeatureRun.Options(path: path)
        options.clock = .virtual
        options.repositoryStorage = nil
        var gate: ReplayGate?
        if !answers.isEmpty {
            var services: [String: [Int: ServiceOutcome]] = [:]
            var deliveries: [String: [Int: ServiceDelivery]] = [:]
            let times = inputLines.compactMap { line -> Int? in
                guard case .integer(let t)? = (try? LuaValue(json: line))?["at"] else { return nil }
                return Int(clamping: t)
            }
            for line in answers {
                guard let value = try? LuaValue(json: line), let answer = SessionRecorder.serviceAnswer(value) else {
                    continue
                }
                services[answer.service, default: [:]][answer.call] = answer.outcome
                if var delivery = answer.delivery {
                    // No later than the input after the action it followed: it came before that one.
                    if delivery.after < times.count { delivery.before = times[delivery.after] }
                    deliveries[answer.service, default: [:]][answer.call] = delivery
                }
            }
            let replayGate = ReplayGate(deliveries: deliveries.values.flatMap(\.values))
            options.serviceTap = ServiceTap(answering: services, deliveries: deliveries, gate: replayGate)
            options.observers.append(ActionsHandled(gate: replayGate))
            gate = replayGate
        }
        var lines = inputLines.makeIterator()
        let input = InputSource(interactive: false, name: "rerun") {
            guard let line = lines.next() else {
                gate?.releaseAll()  // no action comes any more: what still waits for one answers now
                return nil
            }
            return line
        }
        return (options, input)
    }
}

/// Every state a run's feature gives, in order, as its outlet delivers them (not read back
/// from what the run prints).
final class StatesSeen: RunObserver, @unchecked Sendable {
    private let states = Locked<[LuaValue]>([])
    var all: [LuaValue] { states.withLock { $0 } }
    func started(_ run: RunDescription, dispatch: any RunDispatcher) {}
    func observe(_ event: FeatureEvent, t: Int, cause: LuaValue?) {
        if case .state(let state, _) = event { states.withLock { $0.append(state) } }
    }
    func input(_ action: LuaValue, t: Int) {}
}

/// Tells a replay's gate of every action the run handles (its action event), so each
/// recorded answer is delivered after the same action as when it was recorded.
package final class ActionsHandled: RunObserver, @unchecked Sendable {
    let gate: ReplayGate
    package init(gate: ReplayGate) { self.gate = gate }
    package func started(_ run: RunDescription, dispatch: any RunDispatcher) {}
    package func observe(_ event: FeatureEvent, t: Int, cause: LuaValue?) {
        if case .action = event { gate.actionHandled() }
    }
    package func input(_ action: LuaValue, t: Int) {}
}
