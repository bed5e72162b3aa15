import Foundation
import LuaKit
import MoonflowHost
import MoonflowHostTools
import MoonflowLua
import PluginFixtures
import Streams
import XCTest

/// Plugins from anywhere: text the host keeps (`load(name:source:)`, `memory`), or a source
/// the app gives; `require` finds a plugin's modules in the same source, messages name the
/// file as `SOURCE:PATH`, and `reload` reads the source again.
final class PluginSourceTests: XCTestCase {
    static func greeter(_ greeting: String) -> String {
        """
        local mf = require "moonflow"
        local words = require "greeter.words"
        return mf.feature {
          name = "greeter",
          initial = { said = "" },
          actions = { greet = { who = "string" }, fail = {} },
          mutations = { said = { text = "string" } },
          handle = function(a)
            if a.type == "fail" then error("no greeting today") end
            return { type = "said", text = "\(greeting) " .. words.polite(a.who) }
          end,
          reduce = function(s, m) s.said = m.text; return s end,
        }
        """
    }
    static let words = "return { polite = function(who) return who .. '!' end }"

    private func host(_ profile: LuaState.Profile = .trusted, sources: [any PluginSource] = []) throws -> FeatureHost {
        try FeatureHost(configuration: .init(searchPaths: [], profile: profile, clock: .virtual, sources: sources))
    }

    func testAPluginGivenAsTextLoadsRequiresItsModulesAndReloads() throws {
        for profile in LuaState.Profile.allCases {
            let host = try host(profile)
            host.memory.set("greeter/words.lua", Self.words)
            let greeter = try host.load(name: "greeter", source: Self.greeter("hello"))
            greeter.start()
            try greeter.send(["type": "greet", "who": "Ada"])
            host.settle()
            XCTAssertEqual(greeter.state["said"], "hello Ada!", "\(profile)")
            XCTAssertEqual(greeter.source, "memory:greeter/init.lua")

            host.memory.set("greeter/init.lua", Self.greeter("bonjour"))
            host.memory.set("greeter/words.lua", "return { polite = function(who) return who .. ', please' end }")
            try host.reload(greeter)
            XCTAssertEqual(greeter.state["said"], "hello Ada!", "the state is kept")
            try greeter.send(["type": "greet", "who": "Ada"])
            host.settle()
            XCTAssertEqual(greeter.state["said"], "bonjour Ada, please", "the new code and the new module (\(profile))")
        }
    }

    func testMessagesNameTheFileInItsSource() throws {
        let host = try host()
        host.memory.set("greeter/words.lua", Self.words)
        let greeter = try host.load(name: "greeter", source: Self.greeter("hi"))
        let errors = Locked<[FeatureError]>([])
        let token = greeter.observe(kinds: .error) { [weak greeter] _ in
            if let e = greeter?.eventError { errors.withLock { $0.append(e) } }
        }
        defer { token.cancel() }
        greeter.start()
        try greeter.send(["type": "fail"])
        host.settle()
        XCTAssertEqual(errors.withLock { $0.first?.location }, "memory:greeter/init.lua:9")

        XCTAssertThrowsError(try host.load(name: "broken", source: "return {")) { error in
            XCTAssertEqual((error as? FeatureError)?.stage, .load)
            XCTAssertTrue((error as? FeatureError)?.location?.hasPrefix("memory:broken/init.lua:1") == true, "\(error)")
        }
        XCTAssertThrowsError(try host.load("nowhere")) { error in
            XCTAssertTrue("\(error)".contains("no plugin named 'nowhere' in memory:;"), "\(error)")
        }
    }

    func testAnAppsOwnSourceIsLookedInByName() throws {
        let downloads = InMemoryPluginSource(
            ["greeter/init.lua": Self.greeter("hey"), "greeter/words.lua": Self.words], name: "downloads")
        let host = try host(sources: [downloads])
        let greeter = try host.load("greeter")
        greeter.start()
        try greeter.send(["type": "greet", "who": "Bo"])
        host.settle()
        XCTAssertEqual(greeter.state["said"], "hey Bo!")
        XCTAssertEqual(greeter.source, "downloads:greeter/init.lua")
        XCTAssertEqual(downloads.pluginNames(), ["greeter"])
    }

    func testAModuleOnTheSearchPathsComesBeforeOneInASource() throws {
        let folder = try PluginFolder(["greeter/init.lua": Self.greeter("hi"), "greeter/words.lua": Self.words])
        let shadow = InMemoryPluginSource(
            ["greeter/words.lua": "return { polite = function(who) return 'shadowed ' .. who end }"], name: "downloads")
        let host = try FeatureHost(configuration: .init(searchPaths: [folder.dir], clock: .virtual, sources: [shadow]))
        let greeter = try host.load("greeter")
        greeter.start()
        try greeter.send(["type": "greet", "who": "Ada"])
        host.settle()
        XCTAssertEqual(greeter.state["said"], "hi Ada!", "the plugin's own module, from its folder")
    }

    func testASourceIsAskedOnlyForModuleNames() throws {
        final class Asked: PluginSource, @unchecked Sendable {
            let paths = Locked<[String]>([])
            var name: String { "asked" }
            func text(at path: String) throws -> String? { paths.withLock { $0.append(path) }; return nil }
            func pluginNames() -> [String] { [] }
        }
        let asked = Asked()
        let host = try FeatureHost(configuration: .init(searchPaths: [], clock: .virtual, sources: [asked]))
        // (Lua's require itself ends a name at a NUL byte.)
        for name in ["/etc/passwd", "a..b", "x y", "../up", "ok.name"] {
            _ = try? host.load(name: "probe\(abs(name.hashValue))", source: "require '\(name)'")
        }
        XCTAssertEqual(
            asked.paths.withLock { $0 }.filter { !$0.hasSuffix("init.lua") }, ["ok/name.lua"],
            "only a dotted name of words reaches a source")
    }

    func testASandboxedPluginFromASourceRequiresOnlyItsOwnModules() throws {
        let host = try host(.sandboxed)
        host.memory.set("other/secret.lua", "return { leaked = true }")
        XCTAssertThrowsError(try host.load(name: "nosy", source: "require 'other.secret'")) { error in
            XCTAssertTrue(
                "\(error)".contains("a sandboxed plugin can require only its own modules ('nosy.NAME')"), "\(error)")
        }
    }
}
