import CLuaShim

/// A strong reference to any Lua value (a function, a table, a userdata)
/// held in the state's registry, so Swift can hand it back to Lua later.
///
///     let handle = try lua.ref(global: "handle")
///     try lua.call(handle, [.value("hi")])
///
/// Releasing the last Swift reference frees the registry slot on the state's
/// next use, from whatever thread the release happens on.
public final class LuaRef: @unchecked Sendable, Hashable {
    let ref: Int32
    /// The type of the referenced value.
    public let luaType: LuaType
    weak var state: LuaState?
    /// The serial of the state it belongs to: checking that a ref is pushed into its own
    /// state compares this, not the weak reference (a weak load per argument per call).
    let stateSerial: UInt64

    /// - Parameter type: The value's `lua_type` code.
    init(ref: Int32, type: Int32, state: LuaState) {
        self.ref = ref
        self.luaType = LuaType(code: type)
        self.state = state
        self.stateSerial = state.serial
    }

    /// Whether this ref belongs to `state` (no weak load).
    @inline(__always)
    func belongs(to state: LuaState) -> Bool { stateSerial == state.serial }

    /// The registry index of this ref, to push it into `state`.
    /// - Throws: `LuaError.conversion` when it belongs to another state.
    @inline(__always)
    func index(in state: LuaState) throws -> Int64 {
        guard belongs(to: state) else {
            throw LuaError.conversion(
                path: "argument", reason: "a value from another Lua state cannot cross into this one")
        }
        return Int64(ref)
    }

    deinit { state?.scheduleUnref(ref) }

    /// Whether the referenced value is a function.
    public var isFunction: Bool { luaType == .function }
    /// Whether the referenced value is a table.
    public var isTable: Bool { luaType == .table }

    public static func == (a: LuaRef, b: LuaRef) -> Bool { a === b }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
