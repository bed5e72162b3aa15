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
    /// The Lua type of the referenced value (`LUA_TFUNCTION` etc.).
    public let luaType: Int32
    weak var state: LuaState?

    init(ref: Int32, type: Int32, state: LuaState) {
        self.ref = ref
        self.luaType = type
        self.state = state
    }

    deinit { state?.scheduleUnref(ref) }

    public var isFunction: Bool { luaType == 6 }  // LUA_TFUNCTION
    public var isTable: Bool { luaType == 5 }      // LUA_TTABLE

    public static func == (a: LuaRef, b: LuaRef) -> Bool { a === b }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
