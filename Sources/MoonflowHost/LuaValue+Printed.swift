import LuaKit

extension LuaValue {
    /// As Lua's `print` shows a value: strings bare, everything else as `description`.
    var printed: String {
        if case .string(let s) = self { return s.description }
        return description
    }
}
