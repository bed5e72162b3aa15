import LuaKit
import Streams

/// The `moonflow` Lua module (`require "moonflow"`), preloaded into every host
/// state as a C module would be through `luaopen_moonflow`.
///
///     let lua = try LuaState()
///     let bridge = try LuaBridge(lua: lua, scheduler: TestScheduler())
///     try MoonflowModule.install(in: lua, bridge: bridge)
///     try lua.run(string: "local mf = require 'moonflow'; return mf.version", name: "demo")
///
/// The module holds the stream constructors (`mf.just`, `mf.timer`, ...) and
/// `mf.feature`, `mf.compose`, `mf.interactor`, which validate a definition
/// where it is written (errors name the field and the script's `file:line`)
/// and return it marked with its kind.
package enum MoonflowModule {
    /// The module's version string, `mf.version` in Lua.
    package static let version = "0.1.0"

    /// Registers `moonflow` in `package.preload`.
    /// - Parameter bridge: the streams' scheduler and classes; nil gives a
    ///   module with only `version` (what `moonflow exec` needs before a feature runs).
    package static func install(in lua: LuaState, bridge: LuaBridge? = nil) throws {
        try lua.preload("moonflow") { [weak bridge] _ in
            guard let bridge else { return [.value(["version": .string(LuaString(version))])] }
            var fields: [(String, LuaPush)] = [("version", .value(.string(LuaString(version))))]
            for (name, fn) in LuaStreamConstructors.table(bridge) { fields.append((name, .function(fn))) }
            // `mf.array([t])` and `mf.object([t])` (Lua/markers.lua) mark a table (a new one
            // without `t`) to encode as `[]` or `{}` when it is empty, whatever it was before.
            // An empty JSON array pushed to Lua carries the array metatable: mf.array uses it.
            let (array, object) = try bridge.lua.call(
                try bridge.lua.load(HostChunks.markers),
                [
                    .value(.table(LuaTable(isJSONArray: true))), .ref(bridge.dispatch.mark),
                    .ref(bridge.dispatch.viewTarget),
                ]
            ) { (try $0.ref(1), try $0.ref(2)) }
            fields += [("array", .ref(array)), ("object", .ref(object))]
            // `mf.out`: what an `mf.compose`'s `react` returns to pass a child's effect out.
            fields.append(("out", .ref(bridge.dispatch.out)))
            for kind in [FeatureDefinition.Kind.feature, .compose, .interactor] {
                fields.append(
                    (
                        kind.rawValue,
                        .function { args in
                            do {
                                _ = try FeatureDefinition.read(args, 1, kind: kind)
                            } catch let e as DefinitionError {
                                // Each problem at the line of its key in the caller's file.
                                let located = DefinitionSource.locate(e.problems, caller: args.callerLocation)
                                throw LuaRaise(.value(.string(LuaString(located.joined(separator: "\n")))))
                            }
                            try args.rawSet(1, "__moonflow", .string(LuaString(kind.rawValue)))
                            return [.ref(try args.ref(1))]
                        }
                    ))
            }
            return [.ref(try bridge.lua.makeTable(fields))]
        }
    }
}
