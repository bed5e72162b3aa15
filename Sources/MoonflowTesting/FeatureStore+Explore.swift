import LuaKit
import MoonflowHost
import MoonflowHostTools
import MoonflowLua
import Streams

/// What a store under `T.explore` saw since the explorer last looked: each mutation with the
/// state after it, each outward effect and each error, with the type of the action behind it.
/// The explorer (`Lua/explore.lua`) checks them after every step; nothing here asserts.
package final class ExploreLog {
    /// Whether states are kept (only when something checks them: invariants, enum reach).
    let keepStates: Bool
    private var events: [LuaValue] = []
    private var pendingMutation: (LuaValue, LuaValue?)?

    init(keepStates: Bool) { self.keepStates = keepStates }

    func record(_ event: FeatureEvent, cause: LuaValue?) {
        func row(_ kind: String, _ fields: [(String, LuaValue)]) -> LuaValue {
            var t = LuaTable()
            t["kind"] = .string(LuaString(kind))
            if let type = cause?["type"] { t["cause"] = type }
            for (k, v) in fields { t[.string(LuaString(k))] = v }
            return .table(t)
        }
        switch event {
        case .mutation(let m, _):
            pendingMutation = (m, cause)
            if !keepStates { events.append(row("mutation", [("value", m)])) }
        case .state(let s, let seq) where seq > 0:
            if keepStates, let (m, _) = pendingMutation {
                events.append(row("mutation", [("value", m), ("state", s)]))
            }
            pendingMutation = nil
        case .effect(let e, let from):
            events.append(row("effect", [("value", e), ("from", from.map { .string(LuaString($0)) } ?? .nil)]))
        case .error(let message, let location):
            events.append(
                row(
                    "error",
                    [
                        ("message", .string(LuaString(message))),
                        ("where", location.map { .string(LuaString($0)) } ?? .nil),
                    ]))
        default:
            break
        }
    }

    /// The events since the last call, oldest first.
    func take() -> LuaValue {
        defer { events.removeAll(keepingCapacity: true) }
        return .table(LuaTable(array: events))
    }
}

extension FeatureStore {
    /// Starts keeping what the explorer reads.
    package func startExploring(keepStates: Bool) {
        if exploreLog == nil { exploreLog = ExploreLog(keepStates: keepStates) }
    }

    /// Sends `action` and runs what is due without moving the clock, asserting nothing.
    /// - Returns: nil, or why the feature refused the action.
    package func exploreSend(_ action: LuaValue) -> String? {
        do {
            try host.bridge.holdingReentries {
                try running {
                    try feature.send(action)
                    clock.advance(by: 0)
                }
            }
            return nil
        } catch {
            return LuaErrorReport.describe(error, fallback: nil).0
        }
    }

    /// What happened since the explorer last looked (`ExploreLog.take`).
    package func exploreTake() -> LuaValue {
        // Nothing to settle: a send ran what was due, and an advance settles as it goes.
        return exploreLog?.take() ?? .table(LuaTable())
    }

    /// Milliseconds until the next timer is due, or nil when none is pending.
    package var exploreNextDue: Int? {
        clock.nextDueTime.map { max(0, $0 - clock.now) }
    }

    /// Work still in flight, as `what, started by action ...` lines.
    package var exploreInFlight: [String] {
        feature.inFlight.map {
            "\($0.what)\($0.child.map { " in child '\($0)'" } ?? ""), started by action \(Self.describe($0.action))"
        }
    }

    /// Cancels what is in flight and stops the feature (the run is over).
    package func exploreStop() {
        running { feature.cancel(actionType: nil) }
    }
}
