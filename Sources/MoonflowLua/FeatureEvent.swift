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
