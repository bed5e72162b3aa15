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

    /// The rows' keys and kinds, made once: a `LuaString` is an allocation each time it is made.
    private enum Key {
        static let kind: LuaValue = "kind", cause: LuaValue = "cause", value: LuaValue = "value"
        static let state: LuaValue = "state", from: LuaValue = "from", message: LuaValue = "message"
        static let place: LuaValue = "where"
        static let mutation: LuaValue = "mutation", effect: LuaValue = "effect", error: LuaValue = "error"
    }

    func record(_ event: FeatureEvent, cause: LuaValue?) {
        // A field whose value is nil is left out, as assigning nil to a Lua table does.
        func row(_ kind: LuaValue, _ fields: KeyValuePairs<LuaValue, LuaValue>) -> LuaValue {
            var hash: [LuaValue: LuaValue] = [:]
            hash.reserveCapacity(fields.count + 2)
            hash[Key.kind] = kind
            if let type = cause?["type"], !type.isNil { hash[Key.cause] = type }
            for (k, v) in fields where !v.isNil { hash[k] = v }
            return .table(LuaTable(hash: hash))
        }
        switch event {
        case .mutation(let m, _):
            pendingMutation = (m, cause)
            if !keepStates { events.append(row(Key.mutation, [Key.value: m])) }
        case .state(let s, let seq) where seq > 0:
            if keepStates, let (m, _) = pendingMutation {
                events.append(row(Key.mutation, [Key.value: m, Key.state: s]))
            }
            pendingMutation = nil
        case .effect(let e, let from):
            events.append(row(Key.effect, [Key.value: e, Key.from: from.map { .string(LuaString($0)) } ?? .nil]))
        case .error(let message, let location):
            events.append(
                row(
                    Key.error,
                    [
                        Key.message: .string(LuaString(message)),
                        Key.place: location.map { .string(LuaString($0)) } ?? .nil,
                    ]
                ))
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
