import CLua

/// The type of a Lua value, as `lua_type` tells it ([§4.4 of the Lua 5.4
/// manual](https://www.lua.org/manual/5.4/manual.html#lua_type)).
///
///     let handle = try lua.ref(global: "handle")
///     if handle.luaType == .function { try lua.call(handle, []) }
public enum LuaType: Sendable, Hashable, CustomStringConvertible {
    case `nil`, boolean, lightuserdata, number, string, table, function, userdata, thread

    /// The type for a `lua_type` code; `LUA_TNONE` (no value at that index) reads as `nil`.
    init(code: Int32) {
        switch code {
        case LUA_TBOOLEAN: self = .boolean
        case LUA_TLIGHTUSERDATA: self = .lightuserdata
        case LUA_TNUMBER: self = .number
        case LUA_TSTRING: self = .string
        case LUA_TTABLE: self = .table
        case LUA_TFUNCTION: self = .function
        case LUA_TUSERDATA: self = .userdata
        case LUA_TTHREAD: self = .thread
        default: self = .nil
        }
    }

    /// The name Lua's `type()` gives (`"userdata"` for light userdata too).
    public var description: String {
        switch self {
        case .nil: "nil"
        case .boolean: "boolean"
        case .lightuserdata, .userdata: "userdata"
        case .number: "number"
        case .string: "string"
        case .table: "table"
        case .function: "function"
        case .thread: "thread"
        }
    }
}
