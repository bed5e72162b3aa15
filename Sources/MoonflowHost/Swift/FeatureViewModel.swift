import Foundation
import LuaKit
import MoonflowLua
import Observation
import Streams

/// A running feature as a SwiftUI view model: the state decoded into `View`,
/// kept current on the main actor, typed sending of `Action`, and the last error.
///
///     // CartState and CartAction are generated: `moonflow types --swift plugins/cart`
///     @MainActor
///     func makeModel(host: MainActorHost) throws -> FeatureViewModel<CartState, CartAction> {
///         let cart = try host.load("cart")
///         cart.start()
///         return try cart.model(as: CartState.self, actions: CartAction.self)
///     }
///     // In a SwiftUI view: Text("\(model.view.total)"); Button("Add") { model.send(.add(sku: "tea", qty: 2)) }
///
/// `send` never throws at the view: an action the feature refuses (an undeclared one, a
/// field of the wrong type) sets `lastError`, as a failure in `handle` or `reduce` does.
/// `Action` is the generated enum (sent as `{ type = "case", ...fields }`), or `LuaValue`
/// for a dynamic view (`FeatureViewModel(feature, as: View.self)` makes that one).
///
/// It observes the feature for as long as it lives (or until `stop()`). On a host whose
/// executor is `.mainActor`, a state is applied as it is delivered, so `view` is the new state
/// when `send` returns. On a `.queue` host states reach the main actor on a later turn; those
/// that arrive faster than it runs are coalesced (only the latest is decoded). A state whose
/// decoded value equals the current `view` (when `View` is `Equatable`) does not notify
/// observers. A state that does not decode into `View` leaves `view` as it was and sets
/// `decodingError`.
@MainActor
public final class FeatureViewModel<View: Decodable & Sendable, Action: Encodable & Sendable>: Observable {
    // Observable by hand rather than with the macro: in a generic class the macro's key path
    // literals are made again at every read and write (a type lookup each time); these are
    // made once per model.
    private let registrar = ObservationRegistrar()
    private let keys = (view: \FeatureViewModel.view, lastError: \FeatureViewModel.lastError,
                        decodingError: \FeatureViewModel.decodingError)
    private var _view: View
    private var _lastError: FeatureError?
    private var _decodingError: String?

    /// The latest state, decoded.
    public private(set) var view: View {
        get { registrar.access(self, keyPath: keys.view); return _view }
        set { registrar.withMutation(of: self, keyPath: keys.view) { _view = newValue } }
    }
    /// The last error the feature reported (cleared by `clearError()`).
    public private(set) var lastError: FeatureError? {
        get { registrar.access(self, keyPath: keys.lastError); return _lastError }
        set { registrar.withMutation(of: self, keyPath: keys.lastError) { _lastError = newValue } }
    }
    /// Why the latest state did not decode into `View`, if it did not.
    public private(set) var decodingError: String? {
        get { registrar.access(self, keyPath: keys.decodingError); return _decodingError }
        set { registrar.withMutation(of: self, keyPath: keys.decodingError) { _decodingError = newValue } }
    }

    private let feature: RunningFeature?
    /// What a preview was sent, in order (a preview runs no Lua).
    public private(set) var sentInPreview: [Action] = []
    private var observation: Disposable?
    /// What arrived off the main thread and waits for the main actor: the latest state only.
    private let inbox = Locked(Inbox())
    /// Whether two decoded views are equal: `==` when `View` is `Equatable` (found once, here,
    /// not per state), else never.
    private let sameView: (View, View) -> Bool = FeatureViewModel.comparer()

    private struct Inbox {
        var state: LuaValue?
        var errors: [FeatureError] = []
        var hopScheduled = false
    }

    /// - Throws: `FeatureError` of stage `.view` when the current state does not decode into
    ///   `View`: its message names the place (`state.items[2].qty`) as `decodingError` does,
    ///   and `underlying` is the `DecodingError`.
    public init(_ feature: RunningFeature, as type: View.Type = View.self, actions: Action.Type) throws {
        self.feature = feature
        let first = feature.state
        do {
            _view = try LuaValueDecoder().decode(View.self, from: first)
        } catch {
            throw FeatureError(stage: .view, message: FeatureViewModel.mismatch(error), underlying: error)
        }
        let inbox = self.inbox
        observation = feature.outlet.add(kinds: [.state, .error]) { [weak self, weak feature] event in
            // Delivered on the host's state executor, in loop order.
            var error: FeatureError?
            var state: LuaValue?
            switch event {
            // Every state, seq 0 too: a restart, or a reload's migrate, delivers its state
            // with the seq it had (the one from `start()` decodes equal and changes nothing).
            case .state(let s, _): state = s
            case .error(let message, let location):
                error = feature?.eventError ?? FeatureError(stage: .handle, message: message, location: location)
            default: return
            }
            if MainScheduler.isCurrent {
                MainActor.assumeIsolated {
                    guard let self else { return }
                    self.takeInbox()
                    if let state { self.apply(state) }
                    if let error { self.lastError = error }
                }
                return
            }
            let hop = inbox.withLock { inbox in
                if let state { inbox.state = state }
                if let error { inbox.errors.append(error) }
                defer { inbox.hopScheduled = true }
                return !inbox.hopScheduled
            }
            if hop { Task { @MainActor [weak self] in self?.takeInbox() } }
        }
        // A state delivered between the read above and the listener's start went unseen:
        // the snapshot has it.
        let now = feature.state
        if now != first { apply(now) }
    }

    /// A model with a fixed `view` and no Lua at all, for SwiftUI previews: `send` records
    /// the action in `sentInPreview` and changes nothing.
    ///
    ///     #Preview { CartScreen(model: FeatureViewModel(preview: CartView(items: ["tea"], total: 4))) }
    public init(preview view: View, actions: Action.Type) {
        feature = nil
        _view = view
    }

    isolated deinit {
        observation?.dispose()
    }

    /// Sends an action, validated at once: one the feature refuses sets `lastError` and
    /// nothing is queued. On a main-actor host `view` is the new state when it returns.
    ///
    ///     model.send(.add(sku: "tea", qty: 2))
    public func send(_ action: Action) {
        guard let feature else { return sentInPreview.append(action) }
        do {
            if let value = action as? LuaValue { try feature.send(value) } else { try feature.send(case: action) }
        } catch {
            lastError = FeatureError(refused: error)
        }
    }

    /// Sends an action given as JSON text (a web view's message, say), parsed straight into
    /// Lua; a mistake in the text or a refused action sets `lastError`. A preview records it
    /// when it decodes as an `Action`.
    public func send(json: String) {
        guard let feature else {
            do {
                let value = try LuaValue(json: json)
                if let action = value as? Action { sentInPreview.append(action) }
            } catch {
                lastError = FeatureError(refused: error)
            }
            return
        }
        do { try feature.send(json: json) } catch { lastError = FeatureError(refused: error) }
    }

    /// A two-way field: reads `keyPath` of `view`, and writing sends the action `action` makes
    /// of the new value. A refused action sets `lastError` (a setter cannot throw). SwiftUI's
    /// `binding(_:_:)` wraps it; on a `.mainActor` host the field reads back what was written
    /// at once.
    ///
    ///     let text = model.field(\.text) { Action.setText(text: $0) }
    ///     text.wrappedValue = "milk"   // sends { type = "setText", text = "milk" }
    public func field<Value>(_ keyPath: KeyPath<View, Value>, _ action: @escaping (Value) -> Action) -> ViewField<Value> {
        ViewField(get: { self.view[keyPath: keyPath] }, set: { value in self.send(action(value)) })
    }

    /// The model of one child of an `mf.compose`: its own state decoded into `Child`, and
    /// actions sent to it directly (past the parent's `route`).
    ///
    ///     let composer = try cart.scope("composer", as: ComposerState.self, actions: ComposerAction.self)
    ///
    /// - Throws: `FeatureError`: when the feature is not a composition or has no such child
    ///   (stage `.send`), or the child's state does not decode into `Child` (stage `.view`).
    public func scope<Child: Decodable & Sendable, ChildAction: Encodable & Sendable>(
        _ child: String, as type: Child.Type = Child.self, actions: ChildAction.Type
    ) throws -> FeatureViewModel<Child, ChildAction> {
        guard let composite = feature as? LuaComposite else {
            throw FeatureError(stage: .send, message: "scope(\"\(child)\"): \(feature?.name ?? "a preview") is not an mf.compose; only a composition has children")
        }
        // Read on the state executor, where a reload changes them.
        let (name, children) = try composite.bridge.perform { (composite.name, composite.children) }
        guard let found = children.first(where: { $0.name == child }) else {
            let names = children.map(\.name).joined(separator: ", ")
            throw FeatureError(stage: .send, message: "scope(\"\(child)\"): \(name) has no child '\(child)'; its children: \(names)")
        }
        return try FeatureViewModel<Child, ChildAction>(found.feature, as: Child.self, actions: ChildAction.self)
    }

    /// `scope(_:as:actions:)` for a child sent dynamic actions (`LuaValue`).
    public func scope<Child: Decodable & Sendable>(_ child: String, as type: Child.Type = Child.self) throws -> FeatureViewModel<Child, LuaValue> {
        try scope(child, as: type, actions: LuaValue.self)
    }

    public func clearError() { lastError = nil }

    /// Stops observing (the feature itself keeps running).
    public func stop() {
        observation?.dispose()
        observation = nil
    }

    /// Applies what arrived off the main thread: the latest state, then the errors in order.
    private func takeInbox() {
        let (state, errors) = inbox.withLock { inbox in
            defer { inbox = Inbox() }
            return (inbox.state, inbox.errors)
        }
        if let state { apply(state) }
        if let last = errors.last { lastError = last }
    }

    private func apply(_ state: LuaValue) {
        do {
            let decoded = try LuaValueDecoder().decode(View.self, from: state)
            decodingError = nil
            if sameView(view, decoded) { return }
            view = decoded
        } catch {
            decodingError = FeatureViewModel.mismatch(error)
        }
    }
}

extension FeatureViewModel where Action == LuaValue {
    /// A view model sent dynamic actions (`LuaValue`): `model.send(["type": "add"])`.
    public convenience init(_ feature: RunningFeature, as type: View.Type = View.self) throws {
        try self.init(feature, as: type, actions: LuaValue.self)
    }

    /// A preview sent dynamic actions.
    public convenience init(preview view: View) {
        self.init(preview: view, actions: LuaValue.self)
    }
}

extension FeatureViewModel {
    /// What `decodingError` and a failed `init` say.
    static func mismatch(_ error: any Error) -> String {
        "the state does not decode into \(View.self): \(describe(error)); a struct generated from the plugin's declared state (`moonflow types --swift PLUGIN`) always matches it"
    }

    /// A decoding error as a sentence: where (`items[2].text`) and what (`expected a value for
    /// the key "hasMroe" ... did you mean "hasMore"?`), not Swift's dump of its context.
    static func describe(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "\(error)" }
        func path(_ keys: [any CodingKey]) -> String {
            keys.reduce("state") { place, key in key.intValue.map { "\(place)[\($0 + 1)]" } ?? "\(place).\(key.stringValue)" }
        }
        switch error {
        case .keyNotFound(let key, let context): return "\(path(context.codingPath + [key])): \(context.debugDescription)"
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            return "\(path(context.codingPath)): \(context.debugDescription)"
        @unknown default: return "\(error)"
        }
    }

    fileprivate static func comparer() -> (View, View) -> Bool {
        guard let equatable = View.self as? any Equatable.Type else { return { _, _ in false } }
        return equality(equatable)
    }

    private static func equality<E: Equatable>(_: E.Type) -> (View, View) -> Bool {
        { a, b in (a as? E) == (b as? E) }
    }
}
