import Foundation
import XCTest

/// What the commands say must never mislead: next steps that work, errors that
/// name the real cause, help that reads as written, output without escapes of layout.
final class MessagesTests: ScratchTestCase {
    func testNewsNextStepSendsOnlyActionsTheScaffoldDeclares() throws {
        let made = try Moonflow.run(["new", "todo"], in: scratch)
        XCTAssertEqual(made.status, 0, made.stderr)
        let hint = try XCTUnwrap(
            made.stdout.components(separatedBy: "try it at the prompt: ").last?.split(separator: "\n").first)
        // `tick, then tick ms=500` as JSON lines, the way the prompt reads the shorthand.
        let lines = hint.components(separatedBy: ", then ").map { command -> String in
            let words = command.split(separator: " ")
            let fields = words.dropFirst().map { word -> String in
                let pair = word.split(separator: "=")
                return "\"\(pair[0])\":\(pair[1])"
            }
            return "{" + (["\"type\":\"\(words[0])\""] + fields).joined(separator: ",") + "}"
        }
        XCTAssertEqual(lines.count, 2, String(hint))
        let run = try Moonflow.run(
            ["run", "plugins/todo", "--clock", "virtual", "--format", "jsonl"], in: scratch,
            input: lines.joined(separator: "\n") + "\n")
        XCTAssertEqual(run.status, 0, "\(hint): \(run.stdout)")
        XCTAssertFalse(run.stdout.contains("\"event\":\"error\""), run.stdout)
    }

    func testReplayFromAnotherFolderFindsThePluginBesideTheRecordingOrNamesIt() throws {
        try write(
            "app/plugins/chat/init.lua",
            try String(contentsOf: Moonflow.root.appendingPathComponent("plugins/counter/init.lua"), encoding: .utf8))
        try write("app/actions.jsonl", "{\"type\":\"increment\"}\n")
        let app = scratch.appendingPathComponent("app")
        let recorded = try Moonflow.run(
            [
                "run", "plugins/chat", "--clock", "virtual", "--actions", "actions.jsonl", "--format", "jsonl",
                "--record", "session.jsonl",
            ], in: app)
        XCTAssertEqual(recorded.status, 0, recorded.stderr)
        let elsewhere = try Moonflow.run(["replay", "app/session.jsonl"], in: scratch)
        XCTAssertEqual(elsewhere.stdout, "replay app/session.jsonl: identical (1 inputs, 2 states)\n", elsewhere.stderr)
        XCTAssertEqual(try Moonflow.run(["replay", "session.jsonl"], in: app).status, 0)

        try FileManager.default.createDirectory(
            at: scratch.appendingPathComponent("empty"), withIntermediateDirectories: true)
        let wrong = try Moonflow.run(["replay", "app/session.jsonl", "--plugins", "empty"], in: scratch)
        XCTAssertEqual(wrong.status, 2, wrong.stdout)
        XCTAssertEqual(
            wrong.stderr,
            "moonflow replay: app/session.jsonl was recorded with the plugin plugins/chat, which is not in --plugins empty; give the folder `moonflow run` ran in with --plugins DIR\n"
        )
        XCTAssertFalse(wrong.stdout.contains("never came"), wrong.stdout)
    }

    func testPrettyTracebacksAreIndentedNotEscaped() throws {
        try write(
            "plugins/boom/init.lua",
            """
            local mf = require "moonflow"
            local function deeper() error("boom") end
            return mf.feature {
              name = "boom", initial = {}, actions = { go = {} }, mutations = {},
              handle = function() deeper() end,
              reduce = function(state) return state end,
            }
            """)
        let result = try Moonflow.run(
            ["run", "plugins/boom", "--clock", "virtual", "--color", "never"], in: scratch, input: "{\"type\":\"go\"}\n"
        )
        XCTAssertTrue(result.stdout.contains("stack traceback:"), result.stdout)
        XCTAssertTrue(result.stdout.contains("plugins/boom/init.lua:2: in "), result.stdout)
        XCTAssertFalse(result.stdout.contains("\\t"), result.stdout)
    }

    func testHelpTextsHaveNoStrayLineBreaksAndShowInspectsOptionalAddress() throws {
        for command in [[], ["run"], ["test"], ["check"], ["new"], ["exec"], ["replay"]] {
            let help = try Moonflow.run(command + ["--help"])
            let lonely = help.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
                // One word alone that ends no sentence: a line break in the middle of one.
                .filter { !$0.isEmpty && !$0.contains(" ") && !$0.hasPrefix("-") && !".:)".contains($0.last!) }
            XCTAssertEqual(lonely, [], "moonflow \(command.joined()) --help:\n\(help.stdout)")
        }
        let run = try Moonflow.run(["run", "--help"])
        XCTAssertTrue(run.stdout.contains("--inspect [HOST:PORT]"), run.stdout)
        XCTAssertFalse(run.stdout.contains("--inspect <HOST:PORT>"), run.stdout)
    }

    func testUntilSaysWhatWasStillInFlight() throws {
        let result = try Moonflow.run(
            ["run", "plugins/counter", "--clock", "virtual", "--until", "100", "--format", "jsonl"],
            input: "{\"type\":\"incrementLater\",\"ms\":300}\n")
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(
            result.stderr.contains("moonflow: --until 100 ended the run at 100 ms with work in flight: incrementLater"),
            result.stderr)
    }
}
