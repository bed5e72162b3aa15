import Foundation
import XCTest

/// The prompt of `moonflow run` at a terminal (libedit), typed at through util-linux
/// `script`, which gives the binary a pseudo-terminal (each line is typed once the
/// prompt is back, so nothing depends on timing): shorthand, history across runs,
/// completion, the virtual clock's commands, `help`, and escaped control characters.
final class PromptTests: XCTestCase {
    private var scratch: URL!
    private var history: URL { scratch.appendingPathComponent("history") }

    override func setUpWithError() throws {
        scratch = FileManager.default.temporaryDirectory.appendingPathComponent("moonflow-e2e-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        try XCTSkipUnless(
            FileManager.default.isExecutableFile(atPath: "/usr/bin/script"),
            "util-linux script gives the prompt a terminal")
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: scratch)
    }

    /// Types each of `lines` (then `:quit`) at `moonflow run ARGS` on a terminal, each once
    /// the prompt has come back for it, and returns what the run showed, carriage returns
    /// dropped. A line may hold editing keys (Tab, the Up arrow).
    /// How the last `type` run exited.
    private var lastStatus: Int32 = -1

    /// `moonflow run ARGS` on a pseudo-terminal (util-linux `script`), with pipes to type
    /// into it and read what it shows, and a hang guard (not a timing: a run that never
    /// ends is killed, which ends its output). Cancel the guard when done.
    private func startOnTerminal(
        _ arguments: [String]
    ) throws -> (process: Process, input: Pipe, output: Pipe, guard: DispatchWorkItem) {
        let binary = try Moonflow.binary().path
        let command = ([binary, "run"] + arguments + ["--color", "never"]).map { "'\($0)'" }.joined(separator: " ")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/script")
        process.arguments = ["-qec", command, "/dev/null"]
        process.currentDirectoryURL = Moonflow.root
        process.environment = ProcessInfo.processInfo.environment.merging([
            "MOONFLOW_HISTORY": history.path, "TERM": "xterm",
        ]) { $1 }
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        let guardItem = DispatchWorkItem { process.terminate() }
        DispatchQueue.global().asyncAfter(deadline: .now() + 60, execute: guardItem)
        return (process, input, output, guardItem)
    }

    private func type(_ lines: [String], _ arguments: [String]) throws -> String {
        try type(bytes: lines.map { Array($0.utf8) }, arguments)
    }

    /// `type` with each line given as the bytes typed (any bytes, not only UTF-8).
    private func type(bytes lines: [[UInt8]], _ arguments: [String]) throws -> String {
        let (process, input, output, guardItem) = try startOnTerminal(arguments)
        defer { guardItem.cancel() }
        // Ended with :quit, a line: Ctrl-D typed while the terminal is between two prompts (in
        // cooked mode) is taken by the terminal as end of file and lost when libedit reads again.
        let keys = (lines + [Array(":quit".utf8)]).map { Data($0 + [UInt8(ascii: "\r")]) }
        var shown = Data()
        var sent = 0
        while true {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            shown.append(chunk)
            // A prompt on a fresh line ("\r\n> "), not a redraw of the line being edited ("\r> ").
            // Counted in bytes: in a Swift String "\r\n" is one character, never matching "\n".
            let prompts = shown.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
                .dropFirst().filter { $0.starts(with: Array("> ".utf8)) }.count
            while sent < keys.count && prompts > sent {
                input.fileHandleForWriting.write(keys[sent])
                sent += 1
            }
        }
        process.waitUntilExit()
        try? input.fileHandleForWriting.close()
        XCTAssertEqual(sent, keys.count, "the prompt came back after every line")
        XCTAssertEqual(process.terminationReason, .exit, "the run ended at :quit (it was not killed)")
        lastStatus = process.terminationStatus
        return String(decoding: shown, as: UTF8.self).replacingOccurrences(of: "\r", with: "")
    }

    func testShorthandQuotesAndABareValue() throws {
        let todo = try write(
            "todo.lua",
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "todo", initial = { titles = mf.array(), done = 0 },
              actions = { add = { title = "string" }, toggle = { id = "integer" } },
              mutations = { add = { title = "string" }, toggle = { id = "integer" } },
              handle = function(a) return a end,
              reduce = function(s, m)
                if m.type == "add" then s.titles[#s.titles + 1] = m.title else s.done = m.id end
                return s
              end,
            }
            """)
        let out = try type(
            ["add title=\"buy milk\"", "add title='oat bread'", "toggle 1", "add \"x y\""],
            [todo, "--format", "jsonl", "--clock", "virtual"])
        XCTAssertTrue(out.contains(#"{"event":"action","t":0,"action":{"title":"buy milk","type":"add"}}"#), out)
        XCTAssertTrue(out.contains(#"{"event":"action","t":0,"action":{"title":"oat bread","type":"add"}}"#), out)
        XCTAssertTrue(out.contains(#"{"event":"action","t":0,"action":{"id":1,"type":"toggle"}}"#), out)
        XCTAssertTrue(out.contains(#""state":{"done":1,"titles":["buy milk","oat bread","x y"]}"#), out)
        XCTAssertFalse(out.contains("\"event\":\"error\""), out)
    }

    /// A feature whose one action, `add title=...`, keeps each title typed.
    private func writeTitles() throws -> String {
        try write(
            "todo.lua",
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "todo", initial = { titles = mf.array() },
              actions = { add = { title = "string" } },
              mutations = { add = { title = "string" } },
              handle = function(a) return a end,
              reduce = function(s, m) s.titles[#s.titles + 1] = m.title return s end,
            }
            """)
    }

    /// Text typed at the prompt beyond ASCII reaches the action as typed: the prompt reads
    /// keys itself (to print events from the reading thread) and decodes UTF-8.
    func testTypedTextBeyondASCIIReachesTheActionWhole() throws {
        let todo = try writeTitles()
        let out = try type(["add title=\"Zoë’s café ☃ 𝄞\""], [todo, "--format", "jsonl", "--clock", "virtual"])
        XCTAssertTrue(out.contains(#""state":{"titles":["Zoë’s café ☃ 𝄞"]}"#), out)
    }

    /// Bytes that are not UTF-8 become U+FFFD, one for each maximal ill-formed part (as Swift's
    /// own decoder and the Unicode standard's practice have it), and never take the byte after
    /// them: an Enter or an arrow key's ESC right after a bad byte still acts; an overlong form
    /// of a newline or of ESC (`C0 8A`, `C0 9B`) is no newline or ESC, a surrogate or a code
    /// point above U+10FFFF is not dropped.
    func testBytesThatAreNotUTF8BecomeOneReplacementCharacterEachAndTakeNothingAfter() throws {
        let todo = try writeTitles()
        let quoted: [[UInt8]] = [
            [0x61, 0xE2, 0x98, 0x83, 0xF0, 0x9D, 0x84, 0x9E],  // a☃𝄞: well formed
            [0xC0, 0x8A], [0xC0, 0x9B], [0xE0, 0x80, 0x8A],  // overlong newline, ESC, newline
            [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80],  // a surrogate; above U+10FFFF
            [0x80], [0xBF, 0x61], [0xF8, 0x88, 0x80, 0x80, 0x80], [0xFE, 0xFF],
            [0xE2, 0x82], [0xF0, 0x9F, 0x98], [0x61, 0xE2, 0x62], [0xC2, 0x41],  // cut short
        ]
        var lines = quoted.map { Array("add title=\"".utf8) + $0 + [UInt8(ascii: "\"")] }
        var expected = quoted.map { String(decoding: $0, as: UTF8.self) }
        // Enter right after a bad byte ends the line.
        lines.append(Array("add title=x".utf8) + [0xE2])
        expected.append("x\u{FFFD}")
        // An arrow key right after one: Left, x, Right, then the closing quote.
        lines.append(Array("add title=\"".utf8) + [0xE2] + Array("\u{1B}[Dx\u{1B}[C\"".utf8))
        expected.append("x\u{FFFD}")
        let out = try type(bytes: lines, [todo, "--format", "jsonl", "--clock", "virtual"])
        let states = out.split(separator: "\n").compactMap { line -> [String]? in
            guard let start = line.range(of: #"{"event":"state""#) else { return nil }
            let object = try? JSONSerialization.jsonObject(with: Data(line[start.lowerBound...].utf8)) as? [String: Any]
            return (object?["state"] as? [String: Any])?["titles"] as? [String]
        }
        XCTAssertEqual(states.last, expected, out)
    }

    func testHistoryIsKeptAcrossRunsAndUpRecallsIt() throws {
        _ = try type(["increment by=2"], ["plugins/counter", "--clock", "virtual"])
        // libedit's own format (a space is written \040).
        let saved = try String(contentsOf: history, encoding: .utf8)
        XCTAssertTrue(saved.contains("increment") && saved.contains("by=2"), saved)
        // A second run: Up twice brings back the first run's action (before its :quit), Enter sends it.
        let out = try type(["\u{1B}[A\u{1B}[A"], ["plugins/counter", "--clock", "virtual"])
        XCTAssertTrue(out.contains("count: 0 → 2"), out)
        XCTAssertFalse(out.contains("error"), "the arrow key is editing, not an action: \(out)")
    }

    func testTabCompletesActionNamesAndFields() throws {
        let out = try type(
            ["decr\t", "increment b\t5"], ["plugins/counter", "--clock", "virtual", "--format", "jsonl"])
        XCTAssertTrue(out.contains(#""action":{"type":"decrement"}"#), out)
        XCTAssertTrue(out.contains(#""action":{"by":5,"type":"increment"}"#), out)
    }

    func testTheVirtualClockAdvancesOnCommandAndTheBannerSaysWhichClockRuns() throws {
        let out = try type(
            ["incrementLater ms=300", ":advance 200", ":run"], ["plugins/counter", "--clock", "virtual"])
        XCTAssertTrue(out.contains("counter on the virtual clock (it moves only with :advance MS and :run)"), out)
        let lines = out.components(separatedBy: "\n")
        let changed = try XCTUnwrap(lines.first { $0.contains("count: 0 → 1") }, out)
        XCTAssertTrue(changed.contains("   300 ms"), "the timer fired when :run reached 300 ms: \(changed)")
        XCTAssertTrue(try type([], ["plugins/counter"]).contains("counter on the real clock"))
    }

    func testAdvanceSaysWhereTheClockIsAndHowManyTimersFired() throws {
        let out = try type(
            ["incrementLater ms=300", ":advance 200", ":advance 200"], ["plugins/counter", "--clock", "virtual"])
        XCTAssertTrue(out.contains("clock at 200 ms; 0 timers fired"), out)
        XCTAssertTrue(out.contains("clock at 400 ms; 1 timer fired"), out)
        let real = try type([":advance 100"], ["plugins/counter"])
        XCTAssertTrue(real.contains(":advance moves the virtual clock, and this run is on the real clock"), real)
        XCTAssertTrue(real.contains("start the run with --clock virtual"), real)
    }

    func testATypoAtThePromptIsNotAFailureButInPipedInputItIs() throws {
        let out = try type(
            ["incremnt", "increment", "incrementlater ms=5"], ["plugins/counter", "--clock", "virtual"])
        XCTAssertTrue(out.contains("undeclared action 'incremnt'"), out)
        // The declared action nearest the typo is named.
        XCTAssertTrue(out.contains("did you mean 'increment'?"), out)
        XCTAssertTrue(out.contains("did you mean 'incrementLater'?"), out)
        XCTAssertEqual(lastStatus, 0, "a typo at the prompt: \(out)")
        let piped = try Moonflow.run(
            ["run", "plugins/counter", "--clock", "virtual"], input: "{\"type\":\"incremnt\"}\n")
        XCTAssertEqual(piped.status, 1, piped.stdout)
    }

    func testAnInputErrorStandsBesideTheActionsNotUnderOne() throws {
        let result = try Moonflow.run(
            ["run", "plugins/counter", "--clock", "virtual", "--color", "never"],
            input: "{\"type\":\"increment\"}\n{\"type\":\"nope\"}\n")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        let action = try XCTUnwrap(lines.first { $0.contains("→ increment") }, result.stdout)
        let error = try XCTUnwrap(lines.first { $0.contains("✗ error") }, result.stdout)
        XCTAssertEqual(
            error.firstIndex(of: "✗").map { error.distance(from: error.startIndex, to: $0) },
            action.firstIndex(of: "→").map { action.distance(from: action.startIndex, to: $0) }, result.stdout)
    }

    func testAnEventWhileTypingPrintsAboveThePromptAndTheLineIsDrawnAgain() throws {
        let (process, input, output, guardItem) = try startOnTerminal(["plugins/counter"])
        defer { guardItem.cancel() }
        var shown = Data()
        func read(until text: String) {
            while !String(decoding: shown, as: UTF8.self).contains(text) {
                let chunk = output.fileHandleForReading.availableData
                if chunk.isEmpty { return }
                shown.append(chunk)
            }
        }
        /// Reads until `text` appears after the first `marker`.
        func read(after marker: String, until text: String) {
            while true {
                let sofar = String(decoding: shown, as: UTF8.self)
                if let at = sofar.range(of: marker), sofar[at.upperBound...].contains(text) { return }
                let chunk = output.fileHandleForReading.availableData
                if chunk.isEmpty { return }
                shown.append(chunk)
            }
        }
        read(until: "> ")
        input.fileHandleForWriting.write(Data("incrementLater ms=300\r".utf8))
        // Typed only once the prompt is back: typed before, the terminal itself echoes it.
        read(after: "incrementLater { ms = 300 }", until: "> ")
        input.fileHandleForWriting.write(Data("incr".utf8))  // half a line, while the timer runs
        read(until: "count: 0 → 1")
        read(until: "> incr")
        input.fileHandleForWriting.write(Data("ement\r:quit\r".utf8))
        read(until: "count: 1 → 2")
        process.waitUntilExit()
        let out = String(decoding: shown, as: UTF8.self).replacingOccurrences(of: "\r", with: "")
        // As the terminal shows it: a carriage return goes back to the line's start, so what
        // follows the last one on a line is what stays (the event overwrites the cleared prompt).
        // (Split as bytes: in a Swift String "\r\n" is one character.)
        let lines = shown.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
            .map { $0.split(separator: UInt8(ascii: "\r")).last.map { String(decoding: $0, as: UTF8.self) } ?? "" }
            .map { $0.replacingOccurrences(of: "\u{1B}[K", with: "") }
        // Every line the timer's events printed stands alone, not after the typed text.
        let glued = lines.filter { $0.contains("> incr") && $0.contains(" ms ") }
        XCTAssertEqual(glued, [], "events glued onto the typed text: \(out)")
        let after = try XCTUnwrap(out.range(of: "count: 0 → 1"))
        XCTAssertTrue(
            out[after.upperBound...].contains("> incr"), "the prompt and the typed text are drawn again: \(out)")
        XCTAssertTrue(out.contains("count: 1 → 2"), "the line typed across the event is sent whole: \(out)")
    }

    /// On the real clock the prompt is back at once while a timer waits: the line typed next
    /// is read and sent before the timer fires (it used to wait for the run to go idle).
    func testThePromptReadsTheNextLineWhileATimerIsPending() throws {
        let out = try type(["incrementLater ms=1900", "increment by=5"], ["plugins/counter"])
        let sent = try XCTUnwrap(
            out.range(of: "count: 0 → 5"), "increment by=5 was reduced before the timer fired: \(out)")
        XCTAssertTrue(out[sent.upperBound...].contains("count: 5 → 6"), "then the timer's add: \(out)")
        XCTAssertFalse(out.contains("count: 0 → 1"), "the timer did not fire before the typed line was read: \(out)")
    }

    /// `:restart` prints what changed (`count: 1 → 0`) and says "restarted"; before, it
    /// printed `state: nil → { count = 0 }` and "reloaded". An action without fields ends
    /// its line (no trailing space).
    func testARestartPrintsWhatChangedAndSaysRestarted() throws {
        let out = try type(["increment", ":reload", ":restart"], ["plugins/counter", "--clock", "virtual"])
        XCTAssertTrue(out.contains("count: 1 → 0"), out)
        XCTAssertFalse(out.contains("state: nil"), out)
        XCTAssertTrue(out.contains("↻ restarted init.lua"), out)
        XCTAssertEqual(out.components(separatedBy: "↻ reloaded init.lua").count, 2, "one :reload: \(out)")
        XCTAssertTrue(out.contains("→ increment\n"), "no trailing space: \(out.debugDescription)")
    }

    func testHelpListsCommandsAndTheActionsWithTheirFields() throws {
        let out = try type(["help"], ["plugins/counter", "--clock", "virtual"])
        for expected in [
            "commands:", ":advance MS", ":run", "actions:", "  increment by=integer?", "  incrementLater ms=integer",
            "  reset",
        ] {
            XCTAssertTrue(out.contains(expected), "\(expected) in: \(out)")
        }
    }

    func testControlCharactersInDataAreEscaped() throws {
        let todo = try write(
            "titles.lua",
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "titles", initial = { title = "" },
              actions = { set = { title = "string" } }, mutations = { set = { title = "string" } },
              handle = function(a) return a end,
              reduce = function(s, m) s.title = m.title return s end,
            }
            """)
        let out = try type([#"{"type":"set","title":"a\nb\u001b[2J"}"#, #"{"type":"\u001b[A"}"#], [todo])
        XCTAssertTrue(out.contains(#"title: "" → "a\nb\027[2J""#), out)
        XCTAssertTrue(out.contains(#"undeclared action '\027[A'"#), out)
        XCTAssertFalse(out.contains("\u{1B}[2J"), "no raw escape sequence reaches the terminal")
    }

    /// The real clock waits for work in flight after the input ends (until Ctrl-C or
    /// `--until`); at a terminal it says what it waits for instead of hanging silently.
    func testARealClockRunWaitingForWorkInFlightSaysWhatItWaitsFor() throws {
        let plugin = try write(
            "waiter.lua",
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "waiter", initial = {}, actions = { wait = {} }, mutations = {},
              handle = function() return mf.never() end,
              reduce = function(s) return s end,
            }
            """)
        let actions = try write("wait.jsonl", "{\"type\":\"wait\"}\n")
        let binary = try Moonflow.binary().path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/script")
        process.arguments = ["-qec", "'\(binary)' run '\(plugin)' --actions '\(actions)'", "/dev/null"]
        let output = Pipe()
        process.standardOutput = output
        process.standardInput = Pipe()
        try process.run()
        let guardItem = DispatchWorkItem { process.terminate() }
        DispatchQueue.global().asyncAfter(deadline: .now() + 60, execute: guardItem)
        var shown = ""
        while !shown.contains("waiting for work in flight") {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            shown += String(decoding: chunk, as: UTF8.self)
        }
        guardItem.cancel()
        process.terminate()  // as Ctrl-C would
        process.waitUntilExit()
        XCTAssertTrue(
            shown.contains(
                "moonflow: input ended; waiting for work in flight (wait #1) until it finishes; Ctrl-C stops the run, --until MS ends it at MS"
            ), shown)
    }

    @discardableResult
    private func write(_ relative: String, _ text: String) throws -> String {
        let url = scratch.appendingPathComponent(relative)
        try text.write(to: url, atomically: true, encoding: .utf8)
        return url.path
    }
}
