import LuaKit

/// An error a feature reported, with what an app needs to act on it: where in
/// the loop it happened, the action that started it, `file:line`, the Lua
/// traceback apart from the message, and the Swift error when a Swift service
/// threw. The state is as it was before it.
///
///     for await error in feature.errors {
///         if error.stage == .service, let offline = error.underlying as? WarehouseOffline { ... }
///     }
public struct FeatureError: Error, Sendable, CustomStringConvertible {
    public enum Stage: String, Sendable {
        /// An action was refused (schema) or could not be routed.
        case send
        /// `handle` failed, or the stream it returned did.
        case handle
        /// `reduce` failed, or its result could not become the state.
        case reduce
        /// An effect handler failed, or the stream it returned did.
        case effect
        /// A service (Swift or Lua) called through `env.services` failed.
        case service
        /// Loading the plugin's code.
        case load
        /// Reloading it (the old code keeps running).
        case reload
        /// The state did not decode into a view's Swift type (`FeatureViewModel`, `scope(as:)`);
        /// `underlying` is the `DecodingError`.
        case view
    }

    public let stage: Stage
    /// The action whose handling led to it, when known.
    public let action: LuaValue?
    /// The message alone: no `file:line` in front, no traceback.
    public let message: String
    /// `file:line`, when known.
    public let location: String?
    /// The Lua traceback, when Lua gave one.
    public let traceback: String?
    /// The service that failed (stage `.service`).
    public let service: String?
    /// What a Swift service threw, to match by type.
    public let underlying: (any Error)?

    package init(
        stage: Stage, action: LuaValue? = nil, message: String, location: String? = nil,
        traceback: String? = nil, service: String? = nil, underlying: (any Error)? = nil
    ) {
        self.stage = stage
        self.action = action
        self.message = message
        self.location = location
        self.traceback = traceback
        self.service = service
        self.underlying = underlying
    }

    /// `init.lua:12: attempt to index a nil value` (the traceback left out).
    public var description: String { location.map { "\($0): \(message)" } ?? message }

    /// An action `send` refused: not declared, a wrong field, malformed JSON, a disposed
    /// feature. The message says which and how to fix it; `underlying` is the error behind it
    /// (`SchemaError`, `JSONError`).
    package init(refused error: any Error, action: LuaValue? = nil) {
        if let e = error as? FeatureError { self = e; return }
        self.init(stage: .send, action: action, message: "\(error)", underlying: error)
    }

    /// What every call on a stuck Lua state (`LuaState.isStuck`) gets: the state is left to
    /// the thread stuck in it, and the feature must be loaded again in a new host.
    package static func stuck(feature name: String?, action: LuaValue? = nil) -> FeatureError {
        let who = name.map { "feature '\($0)'" } ?? "the feature"
        return FeatureError(
            stage: .send, action: action,
            message:
                "\(who) takes no more actions: its Lua state is stuck in a call that ran on past its time limit in code that cannot be interrupted (a blocking C or Swift function, such as os.execute or a service that never returns); load the plugin again in a new host (moonflow run and moonflow test do it by themselves)"
        )
    }

    /// `error` (a Lua error, a definition's, the host's) as one of `stage`: its message,
    /// `file:line` and traceback apart, and the error itself in `underlying`.
    package init(stage: Stage, wrapping error: any Error, fallback: String? = nil) {
        if let e = error as? FeatureError, e.stage == stage { self = e; return }
        let parts = FeatureError.from(error, stage: stage, action: nil, fallback: fallback)
        self.init(
            stage: stage, message: parts.message, location: parts.location, traceback: parts.traceback,
            underlying: error)
    }

    /// Builds one from any error the loop caught, splitting the message, the
    /// location repeated in front of it, and the traceback.
    package static func from(_ error: any Error, stage: Stage, action: LuaValue?, fallback: String?) -> FeatureError {
        if let e = error as? FeatureError { return e }
        let report = LuaErrorReport.of(error, fallback: fallback)
        let (location, traceback) = (report.location, report.traceback)
        var message = report.message
        if let location, message.hasPrefix(location + ": ") { message.removeFirst(location.count + 2) }
        let streamError = error as? LuaStreamError
        let service = streamError?.service
        return FeatureError(
            stage: service != nil ? .service : stage, action: action, message: message, location: location,
            traceback: traceback, service: service, underlying: streamError?.underlying)
    }
}
