import Foundation
import XCTest

/// luacheck inside `moonflow check` and `moonflow test`, on the built binary. These tests need
/// Debian's lua-check, which `scripts/setup` installs (CI runs it first).
final class LintTests: ScratchTestCase {
    /// A plugin with one of each warning `check` is asked to report, a module, and two spec
    /// files that pass.
    private func writeLintPlugin() throws {
        try write(
            "plugins/lint/init.lua",
            """
            local mf = require "moonflow"
            local helper = require "lint.helper"
            local unusedCount = 0
            return mf.feature {
              name = "lint", initial = { n = 0 },
              actions = { bump = {} }, mutations = { bump = {} },
              handle = function(action)
                if action.type == "bump" then
                  local action = { type = "bump" }
                  return action
                end
              end,
              reduce = function(state)
                state.n = helper(state.n) + (offset or 0)
                do return state end
                state.n = 0
              end,
            }
            """)
        try write("plugins/lint/helper.lua", "return function(n) return n + 1 end\n")
        for name in ["lint", "more"] {
            try write(
                "plugins/lint/spec/\(name)_spec.lua",
                """
                local T = require "moonflow.test"
                describe("lint", function()
                  it("bumps", function()
                    local store = T.store("lint")
                    store:send({ type = "bump" }, function(s) s.n = 1 end)
                    assert.same({ n = 1 }, store.state)
                  end)
                end)
                """)
        }
    }

    private let expectedWarnings = [
        "plugins/lint/init.lua:3:7: warning: unused variable 'unusedCount' (W211)",
        "plugins/lint/init.lua:9:13: warning: shadowing definition of argument 'action' on line 7 (W422)",
        "plugins/lint/init.lua:14:34: warning: accessing undefined variable 'offset' (W113)",
        "plugins/lint/init.lua:16:5: warning: unreachable code (W511)",
    ]

    func testCheckPrintsEachWarningAtFileLineColumnAndPassesWithoutStrict() throws {
        try writeLintPlugin()
        let result = try Moonflow.run(["check", "plugins/lint"], in: scratch)
        XCTAssertEqual(result.status, 0, "warnings alone do not fail check: \(result.stderr)")
        XCTAssertEqual(result.stderr, expectedWarnings.joined(separator: "\n") + "\n")
        XCTAssertEqual(result.stdout, "plugins/lint: ok (4 warnings)\n")
    }

    func testStrictFailsOnWarnings() throws {
        try writeLintPlugin()
        let result = try Moonflow.run(["check", "--strict", "plugins/lint"], in: scratch)
        XCTAssertEqual(result.status, 1, result.stderr)
        XCTAssertEqual(result.stdout, "")
        XCTAssertEqual(
            result.stderr,
            (expectedWarnings + ["plugins/lint: failed under --strict: 4 warnings"]).joined(separator: "\n") + "\n")
    }

    func testWhatTheSandboxRemovesIsFlaggedOnlyUnderSandbox() throws {
        try write(
            "plugins/reach/init.lua",
            """
            local mf = require "moonflow"
            local function stamp() return os.time(), os.execute("true"), io.write("x") end
            return mf.feature {
              name = "reach", initial = {}, actions = { go = {} }, mutations = {},
              handle = function() stamp() end,
              reduce = function(state) return state end,
            }
            """)
        let trusted = try Moonflow.run(["check", "--strict", "plugins/reach"], in: scratch)
        XCTAssertEqual(trusted.status, 0, "a trusted plugin has io and os.execute: \(trusted.stderr)")
        XCTAssertEqual(trusted.stdout, "plugins/reach: ok\n")

        let sandboxed = try Moonflow.run(["check", "--sandbox", "plugins/reach"], in: scratch)
        XCTAssertEqual(sandboxed.status, 0, sandboxed.stderr)
        XCTAssertEqual(
            sandboxed.stderr,
            """
            plugins/reach/init.lua:2:42: warning: accessing undefined field 'execute' of global 'os' (W143)
            plugins/reach/init.lua:2:62: warning: accessing undefined variable 'io' (W113)

            """, "require, mf and os.time are there in the sandbox too")
        XCTAssertEqual(try Moonflow.run(["check", "--sandbox", "--strict", "plugins/reach"], in: scratch).status, 1)
    }

    func testSpecFilesHaveBustedAndTheWholeLibraryEvenUnderSandbox() throws {
        try writeLintPlugin()
        try write(
            "plugins/lint/init.lua",
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "lint", initial = { n = 0 }, actions = { bump = {} }, mutations = { bump = {} },
              handle = function() return { type = "bump" } end,
              reduce = function(state) state.n = state.n + 1 return state end,
            }
            """)
        try write(
            "plugins/lint/spec/io_spec.lua",
            """
            describe("specs", function()
              it("keep io", function() assert.is_function(io.open) end)
              it("see unused locals", function() local left = 1 end)
            end)
            """)
        let result = try Moonflow.run(["check", "--sandbox", "plugins/lint"], in: scratch)
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stderr, "plugins/lint/spec/io_spec.lua:3:44: warning: unused variable 'left' (W211)\n")
    }

    func testTestPrintsThePluginsWarningsOnceAndPasses() throws {
        try writeLintPlugin()
        let result = try Moonflow.run(["test"], in: scratch)
        XCTAssertEqual(result.status, 0, "warnings fail no test: \(result.stdout)")
        for warning in expectedWarnings {
            XCTAssertEqual(
                result.stdout.components(separatedBy: warning + "\n").count - 1, 1,
                "two spec files of one plugin, one warning line: \(result.stdout)")
        }
        XCTAssertTrue(
            result.stdout.hasSuffix("\n" + expectedWarnings.joined(separator: "\n") + "\n2 passed, 0 failed\n"),
            result.stdout)

        let tap = try Moonflow.run(["test", "--tap"], in: scratch)
        XCTAssertTrue(
            tap.stdout.contains(expectedWarnings.map { "# " + $0 }.joined(separator: "\n") + "\n1..2\n"), tap.stdout)
    }

    func testAFileNoPluginLoadsIsStillChecked() throws {
        try write(
            "plugins/tidy/init.lua",
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "tidy", initial = {}, actions = {}, mutations = {},
              handle = function() end, reduce = function(state) return state end,
            }
            """)
        try write("plugins/tidy/unused.lua", "return function(n)\n  return n +\nend\n")
        let result = try Moonflow.run(["check", "plugins/tidy"], in: scratch)
        XCTAssertEqual(result.status, 1, "a module that does not parse is a problem, required or not: \(result.stdout)")
        XCTAssertTrue(
            result.stderr.hasPrefix("plugins/tidy/unused.lua:3:1: expected expression near 'end' (E011)"), result.stderr
        )
    }

    func testWithoutLuacheckCheckSaysSoAndOnlyStrictFails() throws {
        try writeLintPlugin()
        let noLuacheck = ["PATH": scratch.appendingPathComponent("no-such-folder").path]
        let note =
            "moonflow check: luacheck is not installed, so undefined globals, unused variables, shadowing and "
            + "unreachable code were not checked; install Debian's lua-check (scripts/setup installs it)\n"
        let plain = try Moonflow.run(["check", "plugins/lint"], in: scratch, environment: noLuacheck)
        XCTAssertEqual(plain.status, 0, plain.stderr)
        XCTAssertEqual(plain.stderr, note)
        XCTAssertEqual(plain.stdout, "plugins/lint: ok\n")
        let strict = try Moonflow.run(["check", "--strict", "plugins/lint"], in: scratch, environment: noLuacheck)
        XCTAssertEqual(strict.status, 1, "--strict asked for the lint, and it did not run")
        XCTAssertEqual(strict.stderr, note + "plugins/lint: failed under --strict: luacheck did not run\n")
        let test = try Moonflow.run(["test"], in: scratch, environment: noLuacheck)
        XCTAssertEqual(test.status, 0, test.stdout)
        XCTAssertTrue(test.stdout.contains("moonflow test: luacheck is not installed"), test.stdout)
    }

    /// Every plugin of the repository passes `check --strict`, so a warning added to one fails here.
    func testEveryExamplePluginPassesCheckStrict() throws {
        let fm = FileManager.default
        var plugins: [String] = []
        for folder in ["plugins", "examples/notes/plugins", "Tests/Fixtures/plugins"] {
            let names = try fm.contentsOfDirectory(atPath: Moonflow.root.appendingPathComponent(folder).path).sorted()
            plugins += names.map { "\(folder)/\($0)" }.filter {
                fm.fileExists(atPath: Moonflow.root.appendingPathComponent("\($0)/init.lua").path)
            }
        }
        XCTAssertTrue(
            plugins.contains("plugins/counter") && plugins.contains("examples/notes/plugins/notes"), "\(plugins)")
        for plugin in plugins {
            let result = try Moonflow.run(["check", "--strict", plugin])
            XCTAssertEqual(result.status, 0, "moonflow check --strict \(plugin): \(result.stderr)")
            XCTAssertEqual(result.stdout, "\(plugin): ok\n")
            XCTAssertEqual(result.stderr, "", plugin)
        }
    }
}
