import Foundation
import XCTest

/// What people expect of any command-line tool: `--version`, defaults in `--help`,
/// colour that follows `--color` and `NO_COLOR`, exit statuses that agree, `-` for
/// standard input, and usage errors that say what to write.
final class ConventionsTests: ScratchTestCase {
    // MARK: version and help

    func testVersion() throws {
        let result = try Moonflow.run(["--version"])
        XCTAssertEqual(result.status, 0)
        XCTAssertTrue(result.stdout.range(of: #"^\d+\.\d+\.\d+\n$"#, options: .regularExpression) != nil, result.stdout)
        // The same version Lua sees as mf.version.
        let script = try write("v.lua", "io.write(require('moonflow').version, '\\n')")
        XCTAssertEqual(try Moonflow.run(["exec", script], in: scratch).stdout, result.stdout)
    }

    func testHelpShowsTheDefaultLimits() throws {
        for command in ["run", "check"] {
            let help = try Moonflow.run([command, "--help"]).stdout.replacingOccurrences(of: "\n", with: " ")
                .replacingOccurrences(of: #" +"#, with: " ", options: .regularExpression)
            XCTAssertTrue(help.contains("default: 1000 for run and check"), help)
            XCTAssertTrue(help.contains("default: 512 for run and check"), help)
        }
        XCTAssertTrue(try Moonflow.run(["--help"]).stdout.contains("--generate-completion-script"))
    }

    // MARK: exit statuses and usage errors

    func testMissingOrIncompletePathsAreUsageErrorsForRunAndCheck() throws {
        try FileManager.default.createDirectory(
            at: scratch.appendingPathComponent("empty"), withIntermediateDirectories: true)
        for command in ["run", "check"] {
            let missing = try Moonflow.run([command, "nowhere/plugin"], in: scratch)
            XCTAssertEqual(missing.status, 2, "\(command): \(missing.stderr)")
            XCTAssertTrue(missing.stderr.contains("nowhere/plugin does not exist"), missing.stderr)
            let empty = try Moonflow.run([command, "empty"], in: scratch)
            XCTAssertEqual(empty.status, 2, "\(command): \(empty.stderr)")
            XCTAssertTrue(
                empty.stderr.contains("empty is a folder without init.lua; a plugin folder needs an init.lua"),
                empty.stderr)
            XCTAssertEqual(missing.stdout + empty.stdout, "")
        }
    }

    func testNegativeNumbersAreNamedAsBadValues() throws {
        for (arguments, message) in [
            (
                ["run", "plugins/counter", "--time-limit", "-1"],
                "--time-limit must be a positive number of milliseconds"
            ),
            (
                ["run", "plugins/counter", "--memory-limit", "-5"],
                "--memory-limit must be a number of megabytes from 1 to 1048576 (got -5)"
            ),
            (
                ["run", "plugins/counter", "--until", "-5"],
                "--until must be a number of milliseconds, 0 or more (got -5)"
            ),
        ] {
            let result = try Moonflow.run(arguments)
            XCTAssertEqual(result.status, 2)
            XCTAssertTrue(result.stderr.contains(message), "\(arguments): \(result.stderr)")
            XCTAssertFalse(result.stderr.contains("Missing value"), result.stderr)
        }
    }

    func testAFolderGivenAsActionsFileIsNamed() throws {
        let result = try Moonflow.run(["run", "plugins/counter", "--actions", "plugins"])
        XCTAssertEqual(result.status, 2)
        XCTAssertTrue(
            result.stderr.contains(
                "cannot read actions file plugins: it is a folder; give a JSON Lines file, or - for standard input"),
            result.stderr)
        XCTAssertFalse(result.stderr.contains("NSCocoaErrorDomain"), result.stderr)
    }

    // MARK: check

    func testCheckTakesTheLimitsItSuggests() throws {
        try write("spin/init.lua", "while true do end\n")
        let result = try Moonflow.run(["check", "spin", "--time-limit", "50"], in: scratch)
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stderr.contains("time limit of 50 ms exceeded"), result.stderr)
        XCTAssertTrue(result.stderr.contains("spin/init.lua:1"), result.stderr)
        XCTAssertEqual(
            try Moonflow.run(["check", "plugins/counter", "--time-limit", "500", "--memory-limit", "64"]).status, 0)
    }

    func testCheckAcceptsAFileThatReturnsAnInteractor() throws {
        let result = try Moonflow.run(["check", "plugins/colors/datasource.lua"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, "plugins/colors/datasource.lua: ok\n")
    }

    func testCheckListsEveryProblemAtOnce() throws {
        let file = try write(
            "sloppy/init.lua",
            """
            local mf = require "moonflow"
            return mf.feature {
              version = "two",
              initial = {},
              actions = { go = {} }, mutations = {},
              effect = {},
              strategy = { stop = "nope" },
              handle = function() end,
              reduce = function(s) return s end,
            }
            """)
        let result = try Moonflow.run(["check", "sloppy"], in: scratch)
        XCTAssertEqual(result.status, 1)
        XCTAssertEqual(
            result.stderr,
            """
            \(file):2: mf.feature: field 'name' must be a non-empty string (got nil)
            \(file):3: mf.feature: field 'version' must be an integer (got string)
            \(file):6: mf.feature: unknown field 'effect'; did you mean `effects`?
            \(file):7: mf.feature: strategy entries are action = "merge" | "latest" | "concat" | "exhaust" (got ["stop"] = "nope")

            """)
    }

    // MARK: colour

    /// `moonflow ARGS` with its standard output on a terminal (util-linux `script`).
    private func runOnATerminal(_ arguments: [String], environment: [String: String] = [:]) throws -> Moonflow.Result {
        let binary = try Moonflow.binary().path
        let command = ([binary] + arguments).map { "'\($0)'" }.joined(separator: " ")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/script")
        process.arguments = ["-qec", command, "/dev/null"]
        process.currentDirectoryURL = Moonflow.root
        // Only what the test says: the runner's own environment may carry NO_COLOR.
        var inherited = ProcessInfo.processInfo.environment
        inherited["NO_COLOR"] = nil
        process.environment = inherited.merging(environment) { $1 }
        let out = Pipe()
        process.standardOutput = out
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Moonflow.Result(
            status: process.terminationStatus, stdout: String(decoding: data, as: UTF8.self), stderr: "")
    }

    func testColourFollowsTheTerminalNoColorAndTheFlag() throws {
        let actions = try write("in.jsonl", "{\"type\":\"increment\"}\n")
        let path = scratch.appendingPathComponent(actions).path
        let escape = "\u{1B}["
        let painted = try runOnATerminal(["run", "plugins/counter", "--actions", path])
        XCTAssertTrue(
            painted.stdout.contains(escape),
            "colour on a terminal: \(painted.stdout.debugDescription) \(painted.status)")
        XCTAssertFalse(
            try runOnATerminal(["run", "plugins/counter", "--actions", path], environment: ["NO_COLOR": "1"]).stdout
                .contains(escape),
            "NO_COLOR turns it off")
        XCTAssertTrue(
            try runOnATerminal(
                ["run", "plugins/counter", "--actions", path, "--color", "always"], environment: ["NO_COLOR": "1"]
            ).stdout.contains(escape),
            "--color always wins over NO_COLOR")
        XCTAssertFalse(
            try runOnATerminal(["run", "plugins/counter", "--actions", path, "--color", "never"]).stdout.contains(
                escape))
        XCTAssertFalse(
            try Moonflow.run(["run", "plugins/counter", "--actions", path]).stdout.contains(escape), "none into a pipe")
        XCTAssertTrue(
            try Moonflow.run(["run", "plugins/counter", "--actions", path, "--color", "always"]).stdout.contains(escape)
        )
    }

    // MARK: exec -

    func testExecDashReadsTheScriptFromStandardInput() throws {
        let result = try Moonflow.run(["exec", "-", "one"], input: "print(arg[0], ..., require('moonflow') ~= nil)\n")
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, "-\tone\ttrue\n")
        let failing = try Moonflow.run(["exec", "-"], input: "\nerror('boom')\n")
        XCTAssertEqual(failing.status, 1)
        XCTAssertTrue(failing.stderr.contains("stdin:2: boom"), failing.stderr)
    }
}
