import Foundation
import LuaKit
@testable import MoonflowHost
import MoonflowTesting
import PluginFixtures
import XCTest

/// The sandbox has one definition (LuaKit's `Lua/sandbox.lua`) and two users: the
/// sandboxed profile, which applies it to a whole Lua state, and the feature host,
/// which builds each sandboxed plugin's globals from it. A script must meet the
/// same rules in both: each probe answers the same there as here.
final class SandboxDefinitionTests: XCTestCase {
    private static let probes: [(String, String)] = [
        (
            "return tostring(os.execute) .. tostring(os.getenv) .. tostring(io) .. tostring(debug) .. tostring(dofile) .. tostring(loadfile)",
            "nilnilnilnilnilnil"
        ),
        ("return type(os.time()) .. type(os.clock())", "numbernumber"),
        (
            "return select(2, pcall(load, '\\27Lua', 'x', 'b'))",
            "load: binary chunks are refused in the sandbox (use mode 't')"
        ),
        ("return tostring(load('return 1 + 1')())", "2"),
        (
            "return select(2, pcall(setmetatable, {}, { __gc = print }))",
            "setmetatable: __gc metamethods are refused in the sandbox"
        ),
        ("return tostring(getmetatable(''))", "false"),
        ("return tostring(getmetatable(string))", "false"),
        ("return select(2, pcall(rawset, string, 'rep', print))", "rawset: rep is read-only in the sandbox"),
        (
            "return (select(2, pcall(function() math.pi = 3 end)):gsub('^.-:%d+: ', ''))",
            "attempt to modify read-only table math (field pi)"
        ),
        // pairs walks a read-only table without handing out the table behind it.
        ("local _, t = pairs(string) return tostring(t == string) .. tostring(rawget(t, 'rep'))", "truenil"),
        ("local n = 0 for _ in pairs(table) do n = n + 1 end return tostring(n > 5)", "true"),
        ("return tostring(#os == 0) .. type(string.rep)", "truefunction"),
    ]

    private func answers(_ run: (String) throws -> String) rethrows -> [String] {
        try Self.probes.map { try run($0.0) }
    }

    func testASandboxedStateAndASandboxedPluginMeetTheSameRules() throws {
        let state = try LuaState(profile: .sandboxed)
        let inState = try answers { source in
            guard case .string(let s)? = try state.run(string: source, name: "probe").first else { return "?" }
            return s.description
        }

        let trusted = try LuaState()
        let plugins = try PluginSandbox(lua: trusted)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sandbox-probe-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("probe.lua").path
        let env = try plugins.env(forPluginFile: file)
        let inPlugin = try answers { source in
            try source.write(toFile: file, atomically: true, encoding: .utf8)
            guard case .string(let s)? = try trusted.call(try trusted.load(file: file, env: env)).first else {
                return "?"
            }
            return s.description
        }

        XCTAssertEqual(inState, Self.probes.map(\.1), "the sandboxed state")
        XCTAssertEqual(inPlugin, Self.probes.map(\.1), "a sandboxed plugin in a trusted state")
        // The trusted state itself keeps the whole library.
        XCTAssertEqual(
            try trusted.run(string: "return type(io), type(getmetatable(''))", name: "t"), ["table", "table"])
    }

    /// The sandboxed profile takes its raw functions (rawget, rawset, rawlen) before the host
    /// makes its state views; they refuse a view all the same, so a raw write never lands in
    /// the empty view and hides the state's field behind it.
    func testASandboxedStateRefusesRawAccessToAView() throws {
        let source = """
            local mf = require "moonflow"
            return mf.feature {
              name = "probe", initial = { count = 0 }, actions = { go = { how = "string" } }, mutations = { set = { how = "string" } },
              handle = function(a, s)
                if a.how == "hget" then return { type = "set", how = tostring(rawget(s, "count")) } end
                if a.how == "hlen" then return { type = "set", how = tostring(rawlen(s)) } end
                return { type = "set", how = a.how }
              end,
              reduce = function(s, m)
                if m.how == "set" then rawset(s, "count", 1000) end
                if m.how == "get" then s.count = rawget(s, "count") end
                s.count = s.count + 1
                return s
              end,
            }
            """
        for isolated in [true, false] {
            let folder = try PluginFolder(["probe/init.lua": source])
            let host = try FeatureHost(
                configuration: .init(
                    searchPaths: [folder.dir], profile: .sandboxed,
                    clock: .virtual, isolatesPlugins: isolated))
            let log = EventLog()
            let feature = try host.load("probe")
            _ = feature.events.observe { log.append($0, t: 0) }
            feature.start()
            for how in ["set", "get", "hget", "hlen", "inc"] {
                try feature.send(["type": "go", "how": .string(LuaString(how))])
                host.settle(timeout: 10)
            }
            let messages = log.errors.map(\.message)
            XCTAssertEqual(messages.count, 4, "isolated: \(isolated): \(messages)")
            XCTAssertTrue(
                messages.first?.contains("rawset on count: the state is a view, not a plain table") == true,
                messages.description)
            XCTAssertTrue(
                messages.dropFirst().first?.contains("rawget on count: the state is a view") == true,
                messages.description)
            XCTAssertTrue(
                messages.dropFirst(2).first?.contains("rawget on state.count: the state is a view") == true,
                messages.description)
            XCTAssertTrue(messages.last?.contains("rawlen on state: the state is a view") == true, messages.description)
            XCTAssertEqual(feature.state, ["count": 1], "only the last inc counted (isolated: \(isolated))")
        }
    }

    func testAHugeMemoryLimitInMegabytesSaturatesInsteadOfWrapping() throws {
        // 2^44 MB shifted into bytes wrapped to 0 (no limit), and Int.max MB to a negative budget.
        for megabytes in [1 << 44, Int.max] {
            let host = try FeatureHost(configuration: .init(searchPaths: [], memoryLimitMB: megabytes, clock: .virtual))
            XCTAssertEqual(host.lua.memoryLimit, Int.max, "\(megabytes) MB")
        }
        XCTAssertEqual(FeatureHost.bytes(megabytes: 512), 512 << 20)
        XCTAssertThrowsError(try FeatureHost(configuration: .init(searchPaths: [], memoryLimitMB: -1, clock: .virtual)))
    }

    /// What `run --sandbox` refuses (SandboxEscapeTests), an embedding host refuses too:
    /// isolated plugins in a trusted state, and the sandboxed profile with or without them.
    func testAnEmbeddingHostRefusesTheSameEscapesAsRunSandbox() throws {
        let source = """
            local mf = require "moonflow"
            local out = {}
            local function try(name, f) local ok, e = pcall(f) out[#out + 1] = name .. "=" .. (ok and "ok" or "refused") end
            try("pairs", function() local _, a = pairs(string); local _, real = pairs(a); rawset(real, "match", print) end)
            try("next", function() local f, t = pairs(string); rawset(t, "gsub", print) end)
            try("tablepairs", function() local _, t = pairs(table); rawset(t, "concat", print) end)
            try("mf", function() mf.just = print end)
            try("rawmf", function() rawset(mf, "just", print) end)
            try("mfpairs", function() local _, t = pairs(mf); rawset(t, "just", print) end)
            try("strmt", function() local mt = getmetatable(""); mt.__index.rep = print end)
            out[#out + 1] = "match=" .. tostring(string.match == print) .. ",just=" .. tostring(mf.just == print) .. ",strmt=" .. tostring(getmetatable(""))
            return mf.feature {
              name = "probe", initial = { log = table.concat(out, "|") }, actions = { go = {} }, mutations = {},
              handle = function() end, reduce = function(s) return s end,
            }
            """
        let refused =
            "pairs=refused|next=refused|tablepairs=refused|mf=refused|rawmf=refused|mfpairs=refused|strmt=refused|match=false,just=false,strmt=false"
        for (profile, isolated) in [(LuaState.Profile.trusted, true), (.sandboxed, true), (.sandboxed, false)] {
            let folder = try PluginFolder(["probe/init.lua": source])
            let host = try FeatureHost(
                configuration: .init(
                    searchPaths: [folder.dir], profile: profile, clock: .virtual, isolatesPlugins: isolated))
            let feature = try host.load("probe")
            XCTAssertEqual(feature.state, ["log": .string(LuaString(refused))], "\(profile), isolated: \(isolated)")
        }
    }

    func testEachGuardSaysWhoseGlobalsCannotGetAMetatable() throws {
        let state = try LuaState(profile: .sandboxed)
        XCTAssertEqual(
            try state.run(string: "return select(2, pcall(setmetatable, _G, {}))", name: "t"),
            ["setmetatable: the sandbox's globals cannot get a metatable"])
        let trusted = try LuaState()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sandbox-probe-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("probe.lua").path
        try "return select(2, pcall(setmetatable, _G, {}))".write(toFile: file, atomically: true, encoding: .utf8)
        let env = try PluginSandbox(lua: trusted).env(forPluginFile: file)
        XCTAssertEqual(
            try trusted.call(try trusted.load(file: file, env: env)),
            ["setmetatable: a sandboxed plugin's globals cannot get a metatable"])
    }
}
