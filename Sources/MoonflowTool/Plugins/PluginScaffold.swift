import Foundation
import MoonflowHost
import LuaKit
import MoonflowLua

/// `moonflow new NAME`: a plugin folder with a feature (one action, one
/// mutation, a timer) and a spec that passes. Never overwrites anything.
///
///     let files = try PluginScaffold(name: "todo", pluginsFolder: "plugins").write()
///     // ["plugins/todo/init.lua", "plugins/todo/spec/todo_spec.lua"]
package struct PluginScaffold: Sendable {
    /// Why nothing was written.
    package struct Refusal: Error, CustomStringConvertible {
        package let message: String
        /// A bad name is a usage error (exit 2); an existing folder is not.
        package let isUsage: Bool
        package var description: String { message }
    }

    package let name: String
    package let pluginsFolder: String

    package init(name: String, pluginsFolder: String = "plugins") {
        self.name = name
        self.pluginsFolder = pluginsFolder
    }

    /// Writes the files.
    /// - Returns: the paths written.
    /// - Throws: `Refusal` for a name that cannot be a plugin name or a folder that exists.
    package func write() throws -> [String] {
        guard name.range(of: #"^[A-Za-z][A-Za-z0-9_]*$"#, options: .regularExpression) != nil else {
            throw Refusal(
                message:
                    "'\(name)' cannot be a plugin name: use a letter, then letters, digits or underscores (it is also the module prefix in require \"NAME.mod\")",
                isUsage: true)
        }
        let fm = FileManager.default
        let dir = (pluginsFolder as NSString).appendingPathComponent(name)
        guard !fm.fileExists(atPath: dir) else {
            throw Refusal(
                message: "\(dir) already exists; nothing was written (pick another name or remove it first)",
                isUsage: false)
        }
        let initFile = (dir as NSString).appendingPathComponent("init.lua")
        let specFile = ((dir as NSString).appendingPathComponent("spec") as NSString).appendingPathComponent(
            "\(name)_spec.lua")
        do {
            try fm.createDirectory(atPath: PathText.parent(of: specFile), withIntermediateDirectories: true)
            try feature.write(toFile: initFile, atomically: true, encoding: .utf8)
            try spec.write(toFile: specFile, atomically: true, encoding: .utf8)
        } catch {
            throw Refusal(message: "cannot write \(dir): \(error.localizedDescription)", isUsage: false)
        }
        return [initFile, specFile]
    }

    var feature: String {
        """
        -- \(name): made by `moonflow new \(name)`. One action, one mutation, a timer, an output.
        -- Run it: moonflow run \(pluginsFolder)/\(name)      Test it: moonflow test \(pluginsFolder)/\(name)/spec
        local mf = require "moonflow"

        return mf.feature {
          name = "\(name)",
          version = 1,
          initial = { ticks = 0 },
          state = { ticks = "integer" },                   -- checked after every reduce; `moonflow types` reads it
          actions = { tick = { ms = "integer?" } },        -- tick now, or after ms milliseconds
          mutations = { ticked = { by = "integer" } },
          outputs = { tenth = { ticks = "integer" } },     -- what goes out to the app (an outward effect)
          strategy = { tick = "latest" },                  -- a new tick cancels a pending one

          handle = function(action, _state, _env)          -- _: not used here (check --strict)
            local ticked = { type = "ticked", by = 1 }
            if action.ms then return mf.timer(action.ms, ticked) end
            return ticked
          end,

          reduce = function(state, m)
            state.ticks = state.ticks + m.by
            if state.ticks % 10 == 0 then return state, { type = "tenth", ticks = state.ticks } end
            return state
          end,
        }

        """
    }

    var spec: String {
        """
        -- Specs for \(name): `moonflow test \(pluginsFolder)/\(name)/spec`.
        local T = require "moonflow.test"

        describe("\(name)", function()
          it("ticks at once", function()
            local store = T.store("\(name)")
            store:send({ type = "tick" }, function(s) s.ticks = 1 end)
            store:finish()
          end)

          it("tells the app of every tenth tick", function()
            local store = T.store("\(name)", { state = { ticks = 9 } })
            store:send({ type = "tick" }, function(s) s.ticks = 10 end)
            store:receiveEffect({ type = "tenth", ticks = 10 })
            store:finish()
          end)

          it("ticks when the timer fires", function()
            local store = T.store("\(name)")
            store:send({ type = "tick", ms = 500 })      -- nothing changes yet
            store:advance(500)
            store:receive({ type = "ticked", by = 1 }, function(s) s.ticks = 1 end)
            store:finish()
          end)
        end)

        """
    }
}
