import LuaKit
import Streams

/// A feature the host can drive: a Lua feature (`LuaFeature`) or a
/// composition of features (`LuaComposite`). Only a `FeatureHost` makes one: the package's
/// own code reads more of it than an app does (`FeatureInternals`).
public protocol RunningFeature: AnyObject, Sendable {
    /// The definition's name.
    var name: String { get }
    /// The file the definition came from (`plugins/search/init.lua`).
    var source: String { get }
    /// The current state snapshot (any thread).
    var state: LuaValue { get }
    /// Emits the initial state event; call once observers are attached.
    func start()
    /// Validates and queues an action.
    /// - Throws: an error naming the action and the problem; nothing is queued.
    /// - Throws: `FeatureError` of stage `.send` naming the action and the problem (its
    ///   `underlying` is the `SchemaError`), or saying the feature was disposed.
    func send(_ action: LuaValue) throws
    /// Parses a JSON action and queues it (a `LuaFeature` parses it straight into a Lua table).
    /// - Throws: `FeatureError` of stage `.send`: for a mistake in the text (its `underlying`
    ///   is the `JSONError`, with line and column), or as `send(_:)` does; nothing is queued.
    func send(json: String) throws
    /// Cancels everything in flight, ignores later actions and ends the
    /// feature's streams. Releasing the last reference does the same.
    func dispose()
    /// Whether the feature was disposed.
    var isDisposed: Bool { get }
}

/// What the package's own code reads of every feature it makes, beyond what an app calls:
/// the event outlet, the work in flight, the event being delivered. An app meets
/// `RunningFeature` only (docs/embedding.md); `RunningFeature`'s package extension below reaches
/// these on any feature the host made.
package protocol FeatureInternals: RunningFeature {
    /// Every event, in loop order, on the host's state executor: `outlet.add`
    /// for a plain listener, `events` for a signal.
    var outlet: EventOutlet { get }
    /// Whether nothing is queued or running.
    var isIdle: Bool { get }
    /// Cancels in-flight work (all of it, or that of one action type).
    func cancel(actionType: String?)
    /// Tags outward effects with a source name (set by a parent composition).
    var effectSource: String? { get set }
    /// The action behind the event being delivered right now (a mutation's, a
    /// state's, an effect's or an error's); valid inside an `outlet` listener.
    var eventCause: LuaValue? { get }
    /// Work still running, each with the action that started it.
    var inFlight: [FeatureFlight] { get }
    /// The ids of `env.cancellable` streams still running, sorted (a child's as `child: id`).
    var liveCancellableIDs: [String] { get }
    /// The structured error behind the `.error` event being delivered right now
    /// (stage, action, traceback, the Swift error); valid inside an `outlet` listener.
    var eventError: FeatureError? { get }
}

extension RunningFeature {
    /// This feature as the package sees it: every feature a host makes is one.
    package var internals: any FeatureInternals {
        guard let internals = self as? any FeatureInternals else {
            preconditionFailure("\(type(of: self)) is not a feature a FeatureHost made")
        }
        return internals
    }
    package var outlet: EventOutlet { internals.outlet }
    package var isIdle: Bool { internals.isIdle }
    package func cancel(actionType: String?) { internals.cancel(actionType: actionType) }
    package var effectSource: String? {
        get { internals.effectSource }
        set { internals.effectSource = newValue }
    }
    package var eventCause: LuaValue? { internals.eventCause }
    package var inFlight: [FeatureFlight] { internals.inFlight }
    package var liveCancellableIDs: [String] { internals.liveCancellableIDs }
    package var eventError: FeatureError? { internals.eventError }
}

/// Work a feature has in flight: a handler's stream, an effect handler's stream.
public struct FeatureFlight: Sendable, Equatable {
    /// The action that started it.
    public let action: LuaValue
    /// What it is, for messages ("the stream handle returned").
    public let what: String
    /// The child of an `mf.compose` it runs in, if any.
    public var child: String?
    /// The action's number (1 for the first send), and a short tag for messages.
    public let actionID: Int
    let tag: String?

    public init(action: LuaValue, what: String, child: String? = nil, actionID: Int = 0, tag: String? = nil) {
        self.action = action
        self.what = what
        self.child = child
        self.actionID = actionID
        self.tag = tag
    }

    /// For messages: `save #2`, `fetch #3 (effect fetch)`, `posts: load #1` under `mf.compose`.
    public var summary: String {
        let own = "\(action["type"]?.stringValue ?? "?") #\(actionID)\(tag.map { " (\($0))" } ?? "")"
        return child.map { "\($0): \(own)" } ?? own
    }
}

extension RunningFeature {
    /// The actions the feature declares (an `mf.compose` may declare none: nil, `route` decides).
    package var declaredActions: Schema? {
        if let feature = self as? LuaFeature { return feature.definition.actions }
        guard let composite = self as? LuaComposite, composite.definition.declaresActions else { return nil }
        return composite.definition.actions
    }

    /// Every event as a hot signal (made on first use).
    package var events: Signal<FeatureEvent> { outlet.signal }

    /// Parses `json` into a value and sends it (what a composition does: its `route` reads the value).
    public func send(json: String) throws {
        let value: LuaValue
        do { value = try LuaValue(json: json) } catch { throw FeatureError(refused: error) }
        try send(value)
    }
}

extension LuaFeature: BridgedFeature {
    public var name: String { definition.name }
}

/// A feature on a Lua state, for the package's own code: the state's glue (its scheduler, and
/// the async work in flight), which an app never touches.
package protocol BridgedFeature: FeatureInternals {
    var bridge: LuaBridge { get }
    /// What the feature keeps alive for as long as it lives: the host that made it, whose
    /// services, logs and plugin sources its calls reach (an app may release the host first).
    var owner: AnyObject? { get set }
    /// Which action `eventCause` is, when two are equal: an id unique in the feature's run (nil
    /// when there is none to give: a composition's own action events have no loop of their own).
    var eventCauseID: String? { get }
    /// Reports an error that happened outside the loop (a failed reload) as an `.error` event.
    func report(outside error: any Error, stage: FeatureError.Stage)
}
