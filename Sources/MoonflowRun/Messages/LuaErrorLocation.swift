/// Where a Lua error message says it happened, read from its text.
package enum LuaErrorLocation {
    /// `file:line` at the start of a message (`"init.lua:12: boom"`).
    package static func leading(_ message: String) -> String? {
        let parts = message.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, Int(parts[1]) != nil else { return nil }
        return "\(parts[0]):\(parts[1])"
    }
}
