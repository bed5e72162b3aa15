import LuaKit
import MoonflowLua

/// The view model of a `MainActorHost`'s feature: a `FeatureViewModel` with two-way fields.
/// Its Lua runs on the main actor, so `send` has reduced before it returns and a field reads
/// back at once what was written, keystroke by keystroke. A `.queue` host's model has no
/// fields: its states reach the main actor a turn later, and a field would read the text before
/// the last keystroke (a model made with `FeatureViewModel(feature, as:actions:)` is one).
///
///     let model = try cart.model(as: CartState.self, actions: CartAction.self)
///     let note = model.field(\.note) { .setNote(text: $0) }
///     note.wrappedValue = "gift"   // sends { type = "setNote", text = "gift" }
///     note.wrappedValue            // "gift"
public final class MainActorViewModel<View: Decodable & Sendable, Action: Encodable & Sendable>:
    FeatureViewModel<View, Action>
{
    /// Only for a feature whose Lua runs on the main actor (a `MainActorHost`'s, or its child's).
    init(mainActor feature: RunningFeature, as type: View.Type = View.self, actions: Action.Type) throws {
        try super.init(feature, as: type, actions: actions)
    }

    /// A model with a fixed `view` and no Lua at all, for SwiftUI previews: `send` (and a
    /// field's write) records the action in `sentInPreview` and changes nothing.
    public override init(preview view: View, actions: Action.Type) {
        super.init(preview: view, actions: actions)
    }

    /// A two-way field: reads `keyPath` of `view`, and writing sends the action `action` makes
    /// of the new value, reduced before the write returns. A refused action sets `lastError`
    /// (a setter cannot throw). SwiftUI's `binding(_:_:)` wraps it.
    ///
    ///     let text = model.field(\.text) { Action.setText(text: $0) }
    ///     text.wrappedValue = "milk"   // sends { type = "setText", text = "milk" }
    public func field<Value>(_ keyPath: KeyPath<View, Value>, _ action: @escaping (Value) -> Action) -> ViewField<Value>
    {
        // Read as `model.name` is: observed per field when the view names its fields.
        ViewField(get: { self[dynamicMember: keyPath] }, set: { value in self.send(action(value)) })
    }

    /// The model of one child of the `mf.compose`, on the same main-actor host: with fields too.
    public override func scope<Child: Decodable & Sendable, ChildAction: Encodable & Sendable>(
        _ child: String, as type: Child.Type = Child.self, actions: ChildAction.Type
    ) throws -> MainActorViewModel<Child, ChildAction> {
        try MainActorViewModel<Child, ChildAction>(
            mainActor: childFeature(child), as: Child.self, actions: ChildAction.self)
    }
}
