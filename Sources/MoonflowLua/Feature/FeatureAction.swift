import LuaKit

/// An action on its way to `handle`, as the `Interactor` loop carries it.
///
/// An action sent as a `LuaValue` is pushed into Lua when it is handled. One sent as
/// JSON (`send(json:)`) was parsed straight into a Lua table: the loop carries a handle
/// to that table, `handle` gets the very table, and a `LuaValue` is read from it only
/// when someone asks (an action event, an error, the in-flight list).
package enum FeatureAction: Sendable {
    /// An action that crossed into Swift: pushed into Lua when handled.
    case value(LuaValue)
    /// An action parsed from JSON straight into a Lua table.
    case table(LuaTableAction)

    /// The action as a value: for `.table`, read from the table once, when first asked.
    package var value: LuaValue {
        switch self {
        case .value(let v): v
        case .table(let t): t.value
        }
    }

    /// The Lua string of its `type` (what flatten strategies are keyed by), or nil.
    var typeKey: LuaValue? {
        switch self {
        case .value(.table(let t)): t[LuaFeature.typeKey]
        case .value: .none  // not `nil`: beside the `LuaValue`s of the other cases it would be `LuaValue.nil`
        case .table(let t): t.type
        }
    }

    /// Its `type`, for cancellation by type and for messages (`?` when it has none).
    var typeName: String { typeKey?.stringValue ?? "?" }

    /// How `handle` gets it.
    var pushed: LuaPush {
        switch self {
        case .value(let v): .value(v)
        case .table(let t): .ref(t.table)
        }
    }
}

/// An action table parsed from JSON into Lua, with its checked `type`.
///
/// `value` reads the table the first time it is asked for, and keeps the copy: what
/// `handle` did to the table before then shows in it (a handler that writes into its
/// action is rare, and the action event, when someone listens, is read before `handle`
/// runs). The copy is read and kept on the state executor, through the bridge, as the
/// table itself is: no lock of its own.
package final class LuaTableAction: @unchecked Sendable {
    let type: LuaValue
    let table: LuaRef
    private let bridge: LuaBridge
    /// Touched only on the state executor.
    private var copy: LuaValue?

    /// - Parameter value: the copy already made (to validate the action in full), if any.
    init(type: LuaValue, table: LuaRef, bridge: LuaBridge, value: LuaValue? = nil) {
        self.type = type
        self.table = table
        self.bridge = bridge
        self.copy = value
    }

    var value: LuaValue {
        var value = LuaValue.nil
        bridge.performQuietly {
            if copy == nil {
                // A table the handler made unreadable (a function stored into it) still names its type.
                copy =
                    (try? bridge.lua.value(of: table, path: "action"))
                    ?? .table(LuaTable(hash: [LuaFeature.typeKey: type]))
            }
            value = copy ?? .nil
        }
        return value
    }
}
