import Foundation
import LuaKit

/// Globals of its own for each sandboxed plugin, made from the sandbox's one
/// definition (LuaKit's `Lua/sandbox.lua`): the safe part of the standard
/// library (string, table, math, utf8, coroutine read-only; `os` reduced to
/// clock, date, difftime and time, which with `math.randomseed` are the host's controlled
/// ones (`FeatureInputs`); no io, debug, dofile, loadfile or native
/// modules), `load` for text only, and a `require` that finds only the
/// plugin's own modules (`require "NAME.mod"` is `NAME/mod.lua`) and what
/// the host preloads (`moonflow`). One plugin cannot change another's
/// globals, nor the host's.
///
/// `moonflow run --sandbox` uses it on a sandboxed state; `moonflow test
/// --sandbox` on a trusted one, so that busted and the spec keep the whole
/// library while the plugins under test do not.
final class PluginSandbox {
    private unowned let lua: LuaState
    private let makeEnv: LuaRef
    /// By plugin folder: a plugin's files and modules share one set of globals.
    private var envs: [String: LuaRef] = [:]

    /// How the sandbox reaches plugins held by a source (`memory:cart/init.lua`); the host
    /// sets it up.
    let sources = SourceAccess()

    final class SourceAccess: @unchecked Sendable {
        /// The source's name with its colon and the path inside it; nil for a file on disk.
        var split: (String) -> (prefix: String, path: String)? = { _ in nil }
        /// The text of a source's file, by its full name; nil when the source has none.
        var text: (String) throws -> String? = { _ in nil }
    }

    /// `inputs` is dispatch.lua's (`FeatureInputs`): each plugin's `os` and `math` take the
    /// controlled time and seed from it (none: Lua's own).
    init(lua: LuaState, inputs: LuaRef? = nil) throws {
        self.lua = lua
        let sources = self.sources
        let loadModule: LuaFunction = { [weak lua] args in
            guard let lua else { return [] }
            let path = try args.string(1, function: "require")
            if let (prefix, inside) = sources.split(path) {
                let file = prefix + inside
                guard let text = try sources.text(file) else {
                    return [.value(.nil), .value(.string(LuaString("no file \(file)")))]
                }
                return [.ref(try lua.load(string: text, name: file, env: try args.ref(2)))]
            }
            // A NUL would end the path early in the file system's eyes.
            guard !path.utf8.contains(0), FileManager.default.fileExists(atPath: path) else {
                return [.value(.nil), .value(.string(LuaString("no file \(path)")))]
            }
            // Where it really is: a module that is a link (or in a linked folder) out of the
            // plugin's folder would load a file from anywhere (a `.env` read as globals).
            if case .string(let folder)? = try? args.value(3, path: "folder"),
                let real = FolderWalk.leadsOutside(path, of: folder.description)
            {
                return [
                    .value(.nil),
                    .value(
                        .string(
                            LuaString(
                                "\(path) leads outside the plugin's folder \(folder) (to \(real)); a sandboxed plugin loads only its own files"
                            ))),
                ]
            }
            return [.ref(try lua.load(file: path, env: try args.ref(2)))]
        }
        let chunk = try lua.load(string: PluginSandbox.source, name: "moonflow sandbox")
        makeEnv = try lua.call(
            chunk, [.ref(try lua.sandboxDefinition()), .function(loadModule), inputs.map { .ref($0) } ?? .value(.nil)]
        ) {
            try $0.ref(1)
        }
    }

    /// The globals for the plugin that `file` belongs to (`plugins/NAME/init.lua`
    /// or a module beside it; a lone `x.lua` is plugin `x`; `memory:NAME/init.lua` for a
    /// plugin held by a source).
    func env(forPluginFile file: String) throws -> LuaRef {
        let (prefix, inside) = sources.split(file) ?? ("", file)
        let dir = PathText.parent(of: inside)
        let isInit = PathText.name(of: inside) == "init.lua"
        // `./init.lua` is the plugin named after the current folder (PathText.name reads it).
        let name = isInit ? PathText.name(of: dir) : (PathText.name(of: inside) as NSString).deletingPathExtension
        let folder = isInit ? PathText.parent(of: dir) : dir
        let root = prefix.isEmpty ? folder : prefix + (folder == "." ? "" : folder)
        let key = prefix + (isInit ? dir : inside)
        if let env = envs[key] { return env }
        let env = try lua.call(
            makeEnv, [.value(.string(LuaString(name))), .value(.string(LuaString(root.isEmpty ? "." : root)))]
        ) { try $0.ref(1) }
        envs[key] = env
        return env
    }

    /// Forgets every plugin's globals, so the next load makes new ones (a
    /// reload); returns them for `restoreEnvs` should the reload fail.
    func takeEnvs() -> [String: LuaRef] {
        defer { envs = [:] }
        return envs
    }

    func restoreEnvs(_ saved: [String: LuaRef]) { envs = saved }

    static let source = String(decoding: PackageResources.plugin_sandbox_lua, as: UTF8.self)
}
