import LuaKit

/// The `moonflow` Lua module (`require "moonflow"`), preloaded into every host
/// state as a C module would be through `luaopen_moonflow`.
///
///     let lua = try LuaState()
///     try MoonflowModule.install(in: lua)
///     try lua.run(string: "local mf = require 'moonflow'; return mf.version", name: "demo")
public enum MoonflowModule {
    /// The module's version string, `mf.version` in Lua.
    public static let version = "0.1.0"

    /// Registers `moonflow` in `package.preload`.
    /// - Throws: `LuaError` if the state is out of memory.
    public static func install(in lua: LuaState) throws {
        try lua.preload("moonflow") { _ in
            [.value(["version": .string(LuaString(version))])]
        }
    }
}
