import LuaKit

/// What a running feature reports, in loop order: the command line prints
/// these as jsonl or pretty text, the test store asserts on them.
public enum FeatureEvent: Sendable, Equatable {
    /// An action started being handled.
    case action(LuaValue)
    /// A mutation was reduced; `seq` counts reduced mutations from 1.
    case mutation(LuaValue, seq: Int)
    /// The state after the initial load (seq 0) and after every reduced mutation.
    case state(LuaValue, seq: Int)
    /// An effect no internal handler took: it goes out to the host.
    case effect(LuaValue, from: String?)
    /// An effect the feature's own `effects` handler took (`saveDraft`): it stays inside,
    /// and the calls and mutations its handler makes follow it. `from`: the `mf.compose` child.
    case internalEffect(LuaValue, from: String?)
    /// A call of a Swift service or repository method (`drafts:put`): the `call`th of that
    /// service in the run, made by what was being handled when it was made (the action's
    /// `handle`, an internal effect's handler, a stream's operator). Reported by `moonflow run`.
    case call(service: String, call: Int)
    /// A declared invariant that held (or had not been checked) does not hold for the state
    /// of step `seq`, reached by `action`; `reason` is what the invariant returned beside
    /// `false`, or what it raised. Reported by `moonflow run` once each time it breaks.
    case invariant(name: String, seq: Int, action: LuaValue?, reason: String?)
    /// An `mf.compose`'s `react` sent `action` to child `to`, reacting to `effect` of child
    /// `from`; the child's mutations it causes follow.
    case reaction(LuaValue, to: String, from: String, effect: LuaValue)
    /// `env.cancel(id)` stopped the running streams a handler marked `env.cancellable(id, ...)`:
    /// what they would still have sent never arrives. `cause` is the action whose handler (or
    /// effect handler) cancelled them; `from` is the child under `mf.compose`.
    case cancelled(id: String, cause: LuaValue?, from: String?)
    /// Something failed; the state is as it was before.
    case error(message: String, location: String?)
    /// A log line (an interactor's error, with its source location).
    case log(message: String, location: String?)
    /// New code went live: the changed `files` (relative to the plugin folder),
    /// `ms` from the change being noticed to the new code running, and what
    /// happened to the state and the work in flight.
    case reload(files: [String], ms: Double, changes: ReloadChanges)
}

/// What a reload did besides swapping the code: the state keys it filled in
/// from the new `initial`, the keys the state holds that `initial` no longer
/// has, and the work in flight it kept or cancelled (`search #3`: the action's
/// type and number).
public struct ReloadChanges: Sendable, Equatable {
    /// Paths into the state (`unread`, `filters.sort`) filled from the new `initial`.
    public var added: [String] = []
    /// Paths the state holds that the new `initial` does not (kept as they are).
    public var stale: [String] = []
    public var kept: [String] = []
    /// Work whose action type the new code no longer declares, or in a child the new composite dropped.
    public var cancelled: [String] = []
    /// A hot restart (`:restart`, the inspector's restart): the state started over from `initial`.
    package var restarted = false

    public init(added: [String] = [], stale: [String] = [], kept: [String] = [], cancelled: [String] = []) {
        self.added = added
        self.stale = stale
        self.kept = kept
        self.cancelled = cancelled
    }

    /// Another feature's (an `mf.compose` child's), its paths under `name`.
    public mutating func merge(_ other: ReloadChanges, under name: String? = nil) {
        let prefix = name.map { "\($0)." } ?? ""
        added += other.added.map { prefix + $0 }
        stale += other.stale.map { prefix + $0 }
        kept += other.kept.map { prefix + $0 }
        cancelled += other.cancelled.map { prefix + $0 }
    }
}

extension FeatureEvent {
    /// Kinds of events, for a listener that wants only some of them
    /// (`outlet.add(kinds: .state) { ... }`): an event no listener wants is
    /// not made at all, so a mutation `handle` returned stays in Lua unless
    /// someone listens for mutations.
    public struct Kinds: OptionSet, Sendable, Hashable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }

        public static let action = Kinds(rawValue: 1 << 0)
        public static let mutation = Kinds(rawValue: 1 << 1)
        public static let state = Kinds(rawValue: 1 << 2)
        public static let effect = Kinds(rawValue: 1 << 3)
        public static let error = Kinds(rawValue: 1 << 4)
        public static let log = Kinds(rawValue: 1 << 5)
        public static let reload = Kinds(rawValue: 1 << 6)
        public static let cancelled = Kinds(rawValue: 1 << 7)
        public static let all = Kinds(rawValue: 0xff)
    }

    /// The kind of this event.
    public var kind: Kinds {
        switch self {
        case .action, .reaction: .action
        case .mutation: .mutation
        case .state: .state
        case .effect, .internalEffect, .call: .effect
        case .cancelled: .cancelled
        case .error, .invariant: .error
        case .log: .log
        case .reload: .reload
        }
    }
}

extension FeatureEvent {
    /// The event as one short line: the time, the kind (with `seq`) and the value as compact
    /// JSON with sorted keys; a message by its first line. What tests read and compare:
    /// `100 mutation#2 {"n":1,"type":"add"}`, `0 error boom`.
    package func line(at t: Int) -> String {
        switch self {
        case .state(let s, let seq): "\(t) state#\(seq) \(Self.sortedJSON(s))"
        case .action(let a): "\(t) action \(Self.sortedJSON(a))"
        case .reaction(let a, let to, let from, let e):
            "\(t) action(\(to)) \(Self.sortedJSON(a)) react(\(from)) \(Self.sortedJSON(e))"
        case .mutation(let m, let seq): "\(t) mutation#\(seq) \(Self.sortedJSON(m))"
        case .effect(let e, let from): "\(t) effect\(from.map { "(\($0))" } ?? "") \(Self.sortedJSON(e))"
        case .internalEffect(let e, let from):
            "\(t) internal\(from.map { "(\($0))" } ?? "") \(Self.sortedJSON(e))"
        case .call(let service, let call): "\(t) call \(service)#\(call)"
        case .invariant(let name, let seq, _, let reason):
            "\(t) invariant \(name)@\(seq)\(reason.map { " " + Self.firstLine($0) } ?? "")"
        case .cancelled(let id, let cause, let from):
            "\(t) cancelled\(from.map { "(\($0))" } ?? "") \(id)\(cause.map { " by \(Self.sortedJSON($0))" } ?? "")"
        case .error(let m, _): "\(t) error \(Self.firstLine(m))"
        case .log(let m, _): "\(t) log \(Self.firstLine(m))"
        case .reload: "\(t) reload"
        }
    }

    /// A value as compact JSON with sorted keys (its description if it cannot be JSON).
    package static func sortedJSON(_ v: LuaValue) -> String { (try? v.json(sortedKeys: true)) ?? v.description }

    /// The first line of a message (a traceback left out).
    package static func firstLine(_ s: String) -> String {
        String(s.split(separator: "\n", omittingEmptySubsequences: false).first ?? "")
    }
}
