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
/// A `MainActorHost`'s feature makes a `MainActorViewModel` (`cart.model(as:actions:)`), this
/// class with two-way fields besides (`field`, `binding`): only there does a field read back
/// at once what was written.
///
/// It observes the feature for as long as it lives (or until `stop()`). On a host whose
/// executor is `.mainActor`, a state is applied as it is delivered, so `view` is the new state
/// when `send` returns. On a `.queue` host states reach the main actor on a later turn; those
/// that arrive faster than it runs are coalesced (only the latest is decoded). A state whose
/// decoded value equals the current `view` (when `View` is `Equatable`) does not notify
/// observers. A state that does not decode into `View` leaves `view` as it was and sets
/// `decodingError`.
///
/// **Cost follows the change.** When `View` is a `PatchableView` (the generated state structs
/// are), each state is applied as the paths the reduce changed: `state.items[3].qty = 2`
/// decodes that integer and writes it at `view.items[2].qty`, whatever the size of the rest.
/// A change the view cannot take in place (the whole state replaced, an item inserted in the
/// middle of a list) decodes the whole state, as does every change of a view that does not
/// conform.
///
/// **Observation per field.** `model.total` (a field of `view`, read through the model) is
/// observed on its own: a body that reads it is not invalidated when only `items` changes.
/// Reading `model.view` observes the whole view. Per-field observation needs a
/// `PatchableView` that names its fields (the generated structs do); otherwise `model.total`
/// observes the whole view too.
@MainActor
@dynamicMemberLookup
public class FeatureViewModel<View: Decodable & Sendable, Action: Encodable & Sendable>: Observable {
    // Observable by hand rather than with the macro: in a generic class the macro's key path
    // literals are made again at every read and write (a type lookup each time); these are
    // made once per model.
    private let registrar = ObservationRegistrar()
    private let keys = (
        view: \FeatureViewModel.view, lastError: \FeatureViewModel.lastError,
        decodingError: \FeatureViewModel.decodingError
    )
    private var _view: View
    private var _lastError: FeatureError?
    private var _decodingError: String?

    /// The latest state, decoded.
    public private(set) var view: View {
        get { registrar.access(self, keyPath: keys.view); return _view }
        set { registrar.withMutation(of: self, keyPath: keys.view) { _view = newValue } }
    }
    /// The last error the feature reported (cleared by `clearError()`; one of a failed reload
    /// also by the next reload that succeeds, the save that fixed it through `moonflow serve`).
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
    private let inbox = Locked(ViewModelInbox())
    /// Whether two decoded views are equal: `==` when `View` is `Equatable` (found once, here,
    /// not per state), else never.
    private let sameView: (View, View) -> Bool = FeatureViewModel.comparer()

    /// Writes a change in place when `View` is a `PatchableView` (found once, here).
    private let patcher: ViewPatcher<View>.Patch? = ViewPatcher<View>.make()
    /// The state's name of the top-level field a key path of `View` reads, when it says.
    private let fieldName: ViewPatcher<View>.FieldName? = ViewPatcher<View>.fieldNames()
    /// The observation key of each field read through `subscript(dynamicMember:)`, by the
    /// key path read (nil: a key path that names no top-level field, observed as the whole view).
    private var readKeys: [AnyKeyPath: ObservedField?] = [:]
    /// The observation key of each field some read asked for, by its name in the state.
    private var fieldKeys: [String: ObservedField] = [:]
    private typealias ObservedField = KeyPath<FeatureViewModel, Int>
    /// How many states were decoded whole since `init` (tests check that a change goes in place).
    package private(set) var wholeDecodes = 0

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
        // What the reduce behind a state changed, path by path, read while it is delivered.
        observation = feature.outlet.add(kinds: [.state, .error, .reload]) {
            [weak self, weak feature, weak single = feature as? LuaFeature] event in
            // Delivered on the host's state executor, in loop order.
            var error: FeatureError?
            var state: LuaValue?
            var changes: [StateChange]?
            var reloaded = false
            switch event {
            // Every state, seq 0 too: a restart, or a reload's migrate, delivers its state
            // with the seq it had (the one from `start()` decodes equal and changes nothing).
            case .state(let s, _):
                state = s
                changes = single?.deliveredChanges
            case .error(let message, let location):
                error = feature?.eventError ?? FeatureError(stage: .handle, message: message, location: location)
            case .reload: reloaded = true
            default: return
            }
            if MainScheduler.isCurrent {
                MainActor.assumeIsolated {
                    guard let self else { return }
                    self.takeInbox()
                    if reloaded { self.clearReloadError() }
                    if let state { self.apply(state, changes: changes) }
                    if let error { self.lastError = error }
                }
                return
            }
            let hop = inbox.withLock { inbox in
                if let state {
                    inbox.state = state
                    // Past a few hundred changes a whole decode costs less than keeping them.
                    if let changes, inbox.changes != nil, inbox.changes!.count + changes.count <= 512 {
                        inbox.changes!.append(contentsOf: changes)
                    } else {
                        inbox.changes = nil
                    }
                }
                if let error { inbox.errors.append(error) }
                if reloaded {
                    // The reload's own failures before it are fixed; what came after it stays.
                    inbox.errors.removeAll { $0.stage == .reload }
                    inbox.reloaded = true
                }
                defer { inbox.hopScheduled = true }
                return !inbox.hopScheduled
            }
            if hop { Task { @MainActor [weak self] in self?.takeInbox() } }
        }
        // A state delivered between the read above and the listener's start went unseen:
        // the snapshot has it.
        let now = feature.state
        if now != first { apply(now, changes: nil) }
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
        try FeatureViewModel<Child, ChildAction>(childFeature(child), as: Child.self, actions: ChildAction.self)
    }

    /// The feature of the composition's child `child`, which `scope` makes a model of.
    func childFeature(_ child: String) throws -> RunningFeature {
        guard let composite = feature as? LuaComposite else {
            throw FeatureError(
                stage: .send,
                message:
                    "scope(\"\(child)\"): \(feature?.name ?? "a preview") is not an mf.compose; only a composition has children"
            )
        }
        // Read on the state executor, where a reload changes them.
        let (name, children) = try composite.bridge.perform { (composite.name, composite.children) }
        guard let found = children.first(where: { $0.name == child }) else {
            let names = children.map(\.name).joined(separator: ", ")
            throw FeatureError(
                stage: .send, message: "scope(\"\(child)\"): \(name) has no child '\(child)'; its children: \(names)")
        }
        return found.feature
    }

    public func clearError() { lastError = nil }

    /// Stops observing (the feature itself keeps running).
    public func stop() {
        observation?.dispose()
        observation = nil
    }

    /// Applies what arrived off the main thread: the latest state, then the errors in order.
    private func takeInbox() {
        let (state, changes, errors, reloaded) = inbox.withLock { inbox in
            defer { inbox = ViewModelInbox() }
            return (inbox.state, inbox.changes, inbox.errors, inbox.reloaded)
        }
        if reloaded { clearReloadError() }
        if let state { apply(state, changes: changes) }
        if let last = errors.last { lastError = last }
    }

    /// Brings `view` to `state`: the changes written in place when the view takes them
    /// (`PatchableView`), else the whole state decoded.
    private func apply(_ state: LuaValue, changes: [StateChange]?) {
        if let changes, let patcher, patch(changes, patcher) { return }
        wholeDecodes += 1
        do {
            let decoded = try LuaValueDecoder().decode(View.self, from: state)
            clearDecodingError()
            if sameView(_view, decoded) { return }
            // Every field observed so far may have changed.
            let observed = Array(fieldKeys.values)
            registrar.willSet(self, keyPath: keys.view)
            for key in observed { registrar.willSet(self, keyPath: key) }
            _view = decoded
            for key in observed { registrar.didSet(self, keyPath: key) }
            registrar.didSet(self, keyPath: keys.view)
        } catch {
            decodingError = FeatureViewModel.mismatch(error)
        }
    }

    /// Writes `changes` into `view` in place, notifying the observers of the whole view and of
    /// each top-level field changed. False (nothing written) when some change does not go in
    /// place: the caller decodes the whole state.
    private func patch(_ changes: [StateChange], _ patcher: ViewPatcher<View>.Patch) -> Bool {
        var fields: [ObservedField] = []
        var changed = 0
        for change in changes where change.old != change.new {
            guard let top = change.path.first else { return false }
            changed += 1
            if let name = top.stringValue, let key = fieldKeys[name], !fields.contains(key) { fields.append(key) }
        }
        guard changed > 0 else { clearDecodingError(); return true }
        registrar.willSet(self, keyPath: keys.view)
        for key in fields { registrar.willSet(self, keyPath: key) }
        defer {
            for key in fields { registrar.didSet(self, keyPath: key) }
            registrar.didSet(self, keyPath: keys.view)
        }
        var written: [StateChange] = []
        for change in changes where change.old != change.new {
            guard (try? patcher(&_view, change.path[...], change.new)) == true else {
                // Put back what went in, newest first (those old values were in the view),
                // and let a whole decode say what is wrong.
                for done in written.reversed() { _ = try? patcher(&_view, done.path[...], done.old) }
                return false
            }
            if changed > 1 { written.append(change) }
        }
        clearDecodingError()
        return true
    }

    /// A reload succeeded: a failed reload's error is no longer true (another stage's stays).
    private func clearReloadError() {
        if _lastError?.stage == .reload { lastError = nil }
    }

    private func clearDecodingError() {
        if _decodingError != nil { decodingError = nil }
    }

    /// A field of `view`, observed on its own when `View` names it (`model.total`): a body
    /// that reads it is not invalidated by a change elsewhere in the view.
    public subscript<Value>(dynamicMember keyPath: KeyPath<View, Value>) -> Value {
        if let key = observedKey(keyPath) {
            registrar.access(self, keyPath: key)
        } else {
            registrar.access(self, keyPath: keys.view)
        }
        return _view[keyPath: keyPath]
    }

    /// The observation key of the top-level field `keyPath` reads, made once per field.
    private func observedKey(_ keyPath: PartialKeyPath<View>) -> ObservedField? {
        if let known = readKeys[keyPath] { return known }
        var key: ObservedField?
        if let name = fieldName?(keyPath) {
            key = fieldKeys[name] ?? \FeatureViewModel[observedField: name]
            fieldKeys[name] = key
        }
        readKeys[keyPath] = .some(key)
        return key
    }

    /// What per-field observation keys name: never read for its value.
    private nonisolated subscript(observedField name: String) -> Int { 0 }
}

/// What arrived off the main thread for a view model and waits for the main actor. Not nested
/// in the generic model: its metadata would be looked up per state.
private struct ViewModelInbox {
    var state: LuaValue?
    /// The changes of the states since the last hop, in order; nil when one came without
    /// them (the whole state is decoded then).
    var changes: [StateChange]? = []
    var errors: [FeatureError] = []
    /// A reload succeeded since the last hop.
    var reloaded = false
    var hopScheduled = false
}

/// How a view model writes a change into a `PatchableView` it knows only as `View`.
enum ViewPatcher<View> {
    typealias Patch = (inout View, ArraySlice<LuaValue>, LuaValue) throws -> Bool
    typealias FieldName = (PartialKeyPath<View>) -> String?

    static func make() -> Patch? {
        guard let type = View.self as? any PatchableView.Type else { return nil }
        return patch(type)
    }

    static func fieldNames() -> FieldName? {
        guard let type = View.self as? any PatchableView.Type else { return nil }
        return names(type)
    }

    /// `P` is `View`: the closure over `P` is the closure over `View`, and the view is
    /// written in place (no copy of it is made).
    private static func patch<P: PatchableView>(_: P.Type) -> Patch {
        let patch: (inout P, ArraySlice<LuaValue>, LuaValue) throws -> Bool = { view, path, value in
            try view.patch(path, to: value)
        }
        return patch as! Patch
    }

    private static func names<P: PatchableView>(_: P.Type) -> FieldName {
        { keyPath in (keyPath as? PartialKeyPath<P>).flatMap { P.field(of: $0) } }
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
            keys.reduce("state") { place, key in
                key.intValue.map { "\(place)[\($0 + 1)]" } ?? "\(place).\(key.stringValue)"
            }
        }
        switch error {
        case .keyNotFound(let key, let context):
            return "\(path(context.codingPath + [key])): \(context.debugDescription)"
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
