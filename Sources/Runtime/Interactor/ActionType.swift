/// An action that names its own type, for flatten strategies and `cancel(actionType:)`.
///
///     struct Search: NamedAction { var text: String; var actionType: String { "search" } }
///
/// Actions that do not conform are named by their enum case (`query(text: "a")` is `"query"`).
public protocol NamedAction {
    /// The name shared by every action of this kind.
    var actionType: String { get }
}

/// The default action namer: `NamedAction.actionType`, else the enum case name.
///
///     defaultActionType(Action.query(text: "a"))   // "query"
///
/// - Parameter action: Any action.
/// - Returns: Its type name.
public func defaultActionType(_ action: some Sendable) -> String {
    if let named = action as? any NamedAction { return named.actionType }
    let text = String(describing: action)
    guard let open = text.firstIndex(of: "(") else { return text }
    return String(text[..<open])
}
