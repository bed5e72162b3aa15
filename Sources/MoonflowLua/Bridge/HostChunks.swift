import LuaKit

/// The Lua that every feature's state runs besides the feature's own: dispatch.lua (the
/// state's views and the calls into a definition), markers.lua (`mf.array`/`mf.object`)
/// and task_await.lua (`task:await()`), each with its bytecode (Lua/compiled/*.luac,
/// written by `scripts/precompile-lua`), so making a state does not compile them.
package enum HostChunks {
    package static let dispatch = PrecompiledChunk(
        source: PackageResources.dispatch_lua, compiled: PackageResources.dispatch_luac, name: "moonflow")
    package static let markers = PrecompiledChunk(
        source: PackageResources.markers_lua, compiled: PackageResources.markers_luac, name: "moonflow")
    package static let taskAwait = PrecompiledChunk(
        source: PackageResources.task_await_lua, compiled: PackageResources.task_await_luac, name: "moonflow.task")

    /// Each chunk with the file its bytecode is kept in (under Sources/), LuaKit's own
    /// (the sandbox, the text-only module searchers) included.
    package static let all: [(file: String, chunk: PrecompiledChunk)] =
        [
            ("MoonflowLua/Lua/compiled/dispatch.luac", dispatch), ("MoonflowLua/Lua/compiled/markers.luac", markers),
            ("MoonflowLua/Lua/compiled/task_await.luac", taskAwait),
        ] + LuaState.shippedChunks
}
