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
    /// Something failed; the state is as it was before.
    case error(message: String, location: String?)
    /// A log line (an interactor's error, with its source location).
    case log(message: String, location: String?)
    /// New code went live: the changed `files` (relative to the plugin folder),
    /// `ms` from the change being noticed to the new code running.
    case reload(files: [String], ms: Double)
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
        public static let all = Kinds(rawValue: 0x7f)
    }

    /// The kind of this event.
    public var kind: Kinds {
        switch self {
        case .action: .action
        case .mutation: .mutation
        case .state: .state
        case .effect: .effect
        case .error: .error
        case .log: .log
        case .reload: .reload
        }
    }
}
