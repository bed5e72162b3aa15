/// One two-way field of a view model: what a text field or a toggle binds to. Reading gives
/// the view's value; writing sends an action (`MainActorViewModel.field`). SwiftUI's `Binding`
/// is made from one by `MainActorViewModel.binding`.
///
///     let name = model.field(\.name) { Action.rename(name: $0) }
///     name.wrappedValue = "Ada"    // sends { type = "rename", name = "Ada" }
///     name.wrappedValue            // "Ada" at once: the model's Lua runs on the main actor
@MainActor
public struct ViewField<Value> {
    private let get: @MainActor () -> Value
    private let set: @MainActor (Value) -> Void

    public init(get: @escaping @MainActor () -> Value, set: @escaping @MainActor (Value) -> Void) {
        self.get = get
        self.set = set
    }

    public var wrappedValue: Value {
        get { get() }
        nonmutating set { set(newValue) }
    }
}

#if canImport(SwiftUI)
import SwiftUI

extension MainActorViewModel {
    /// A SwiftUI binding to `keyPath` of `view` whose writes send `action(newValue)`:
    ///
    ///     TextField("Note", text: model.binding(\.note) { .setNote(text: $0) })
    public func binding<Value>(_ keyPath: KeyPath<View, Value>, _ action: @escaping (Value) -> Action) -> Binding<Value>
    {
        let field = field(keyPath, action)
        return Binding(get: { field.wrappedValue }, set: { field.wrappedValue = $0 })
    }
}
#endif
