import LuaKit
import Streams

/// A feature the host can drive: a Lua feature (`LuaFeature`) or a
/// composition of features (`LuaComposite`).
public protocol RunningFeature: AnyObject, Sendable {
    /// The definition's name.
    var name: String { get }
    /// Every event, in loop order, on the host's state executor: `outlet.add`
    /// for a plain listener, `events` for a signal.
    var outlet: EventOutlet { get }
    /// The current state snapshot (any thread).
    var state: LuaValue { get }
    /// Whether nothing is queued or running.
    var isIdle: Bool { get }
    /// What is still running or queued, for messages: `save #2` (action type and number).
    var inFlight: [String] { get }
    /// Emits the initial state event; call once observers are attached.
    func start()
    /// Validates and queues an action.
    /// - Throws: an error naming the action and the problem; nothing is queued.
    func send(_ action: LuaValue) throws
    /// Cancels in-flight work (all of it, or that of one action type).
    func cancel(actionType: String?)
    /// Tags outward effects with a source name (set by a parent composition).
    var effectSource: String? { get set }
}

extension RunningFeature {
    /// Every event as a hot signal (made on first use).
    public var events: Signal<FeatureEvent> { outlet.signal }
}

extension LuaFeature: RunningFeature {
    public var name: String { definition.name }
}
