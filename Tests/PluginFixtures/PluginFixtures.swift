import Foundation
import LuaKit
import MoonflowLua

/// Plugins written to a fresh temporary folder for one test, and removed with it: what the
/// harnesses of MoonflowLuaTests and MoonflowHostTests load their features from.
///
///     let folder = try PluginFolder(["probe/init.lua": Probe.source("return mf.just(1)")])
///     folder.path("probe/init.lua")   // /tmp/mf1A2B3C4D/probe/init.lua
public final class PluginFolder: Sendable {
    /// The folder itself.
    public let dir: String

    public init(_ files: [String: String]) throws {
        dir = (NSTemporaryDirectory() as NSString).appendingPathComponent("mf\(UUID().uuidString.prefix(8))")
        for (path, text) in files {
            let full = (dir as NSString).appendingPathComponent(path)
            try FileManager.default.createDirectory(atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try text.write(toFile: full, atomically: true, encoding: .utf8)
        }
    }

    deinit { try? FileManager.default.removeItem(atPath: dir) }

    /// Full path of a file in the folder.
    public func path(_ relative: String) -> String { (dir as NSString).appendingPathComponent(relative) }
}

/// A feature whose `go` action runs the Lua `body` (which returns a stream) and reduces each of
/// the stream's values as a `v` mutation; a final `|` marks completion.
///
///     Probe.source("return mf.timer(100, 'a')")   // values: ["100:a", "100:|"]
public enum Probe {
    public static func source(_ body: String, header: String = "", extra: String = "") -> String {
        """
        local mf = require "moonflow"
        \(header)
        return mf.feature {
          name = "probe",
          initial = { seen = {} },
          actions = { go = { n = "any?" } },
          mutations = { v = { value = "any" } },
          \(extra)
          handle = function(action, state, env)
            local s = (function() \(body) end)()
            return mf.concat(s:map(function(x) return { type = "v", value = x } end), mf.just { type = "v", value = "|" })
          end,
          reduce = function(state, m) state.seen[#state.seen + 1] = m.value; return state end,
        }
        """
    }
}

extension Probe {
    /// One field of each reduced mutation as `t:field`, and errors as `t:error:message`: what
    /// a probe emitted (field `value`), with exact virtual times.
    public static func mutations(_ field: String, in events: [(t: Int, event: FeatureEvent)]) -> [String] {
        events.compactMap { t, event in
            switch event {
            case .mutation(let m, _): "\(t):\(Render.plain(m[field] ?? .nil))"
            case .error(let message, _): "\(t):error:\(FeatureEvent.firstLine(message))"
            default: nil
            }
        }
    }
}

/// Values as the tests compare them.
public enum Render {
    /// Compact JSON with sorted keys (the description if it cannot be JSON).
    public static func json(_ v: LuaValue) -> String { FeatureEvent.sortedJSON(v) }

    /// Strings bare, everything else as `json`.
    public static func plain(_ v: LuaValue) -> String {
        if case .string(let s) = v { return s.description }
        return json(v)
    }
}
