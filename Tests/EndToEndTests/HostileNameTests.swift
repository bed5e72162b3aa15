import Foundation
import XCTest

/// Names a plugin chose (its files' names) reach lcov's tracefile and the terminal as
/// data, never as records of their own or as escape sequences.
final class HostileNameTests: ScratchTestCase {
    /// A plugin with a clean `init.lua` and a spec that loads it.
    private func writeGauge() throws {
        try write(
            "plugins/gauge/init.lua",
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "gauge", initial = { n = 0 },
              actions = { tick = {} }, mutations = { ticked = {} },
              handle = function() return { type = "ticked" } end,
              reduce = function(state) state.n = state.n + 1 return state end,
            }
            """)
        try write(
            "plugins/gauge/spec/gauge_spec.lua",
            """
            local T = require "moonflow.test"
            it("ticks", function()
              local store = T.store("gauge")
              store:send({ type = "tick" }, function(s) s.n = 1 end)
            end)
            """)
    }

    /// A file whose name holds line breaks would write lcov records of its own (genhtml
    /// would then publish `.env`): it is left out of the tracefile, and the run says so.
    func testAFileNameWithLineBreaksWritesNoLcovRecordOfItsOwn() throws {
        try writeGauge()
        try write(
            "plugins/gauge/x\nend_of_record\nTN:\nSF:.env\nDA:1,1\nLF:1\nLH:1\nend_of_record\nTN:\nSF:y.lua",
            "return 1\n")
        let result = try Moonflow.run(["test", "--coverage"], in: scratch)
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        let lcov = try String(contentsOf: scratch.appendingPathComponent("coverage/lcov.info"), encoding: .utf8)
        let sources = lcov.split(separator: "\n").filter { $0.hasPrefix("SF:") }
        XCTAssertEqual(sources, ["SF:plugins/gauge/init.lua"], lcov)
        XCTAssertEqual(lcov.components(separatedBy: "end_of_record\n").count - 1, 1, lcov)
        XCTAssertTrue(
            result.stdout.contains(#"left out of coverage/lcov.info: plugins/gauge/x\nend_of_record\nTN:\nSF:.env"#),
            result.stdout)
    }

    /// Nothing a plugin named reaches the terminal as an escape sequence or a bell.
    private func assertNoControlCharacters(_ text: String, file: StaticString = #filePath, line: UInt = #line) {
        let found = text.unicodeScalars.filter { ($0.value < 0x20 && $0 != "\n") || (0x7F...0x9F).contains($0.value) }
        XCTAssertTrue(
            found.isEmpty, "control characters \(found.map { $0.value }) in:\n\(text.debugDescription)", file: file,
            line: line)
    }

    /// `check`'s lint line and problem name the file as a person can read it: `\027]0;...\007`.
    func testCheckShowsControlCharactersInFileNamesAndMessagesEscaped() throws {
        try writeGauge()
        try write("plugins/gauge/\u{1B}]0;pwned\u{07}\u{1B}[2Jx.lua", "local unused = 1\nreturn 1\n")
        let lint = try Moonflow.run(["check", "plugins/gauge"], in: scratch)
        XCTAssertEqual(lint.status, 0, lint.stdout + lint.stderr)
        XCTAssertTrue(
            lint.stderr.contains(
                #"plugins/gauge/\027]0;pwned\007\027[2Jx.lua:1:7: warning: unused variable 'unused' (W211)"#),
            lint.stderr)
        assertNoControlCharacters(lint.stdout + lint.stderr)

        try write("plugins/bad/init.lua", "error(\"\\27]0;pwned\\7 \\u{9B} the plugin fails\")\n")
        let bad = try Moonflow.run(["check", "plugins/bad"], in: scratch)
        XCTAssertEqual(bad.status, 1, bad.stdout + bad.stderr)
        XCTAssertTrue(bad.stderr.contains(#"\027]0;pwned\007"#), bad.stderr)
        assertNoControlCharacters(bad.stdout + bad.stderr)
    }

    /// `test`'s lines per test and file, its failures, its lint and its coverage table.
    func testTestShowsControlCharactersInNamesEscaped() throws {
        try writeGauge()
        try write("plugins/gauge/\u{1B}[2Jx.lua", "local unused = 1\nreturn 1\n")
        try write(
            "plugins/gauge/spec/\u{1B}[31mred_spec.lua",
            """
            it("\\27]0;title\\7 passes", function() end)
            it("\\27[2J fails", function() error("\\27[2J\\n\\27[31m boom") end)
            """)
        let result = try Moonflow.run(["test", "--coverage"], in: scratch)
        XCTAssertEqual(result.status, 1, result.stdout + result.stderr)
        XCTAssertTrue(result.stdout.contains(#"plugins/gauge/spec/\027[31mred_spec.lua"#), result.stdout)
        XCTAssertTrue(result.stdout.contains(#"✓ \027]0;title\007 passes"#), result.stdout)
        XCTAssertTrue(result.stdout.contains(#"ERROR \027[2J fails"#), result.stdout)
        XCTAssertNotNil(
            result.stdout.range(of: #"plugins/gauge/\\027\[2Jx\.lua +0/\d+"#, options: .regularExpression),
            result.stdout)
        assertNoControlCharacters(result.stdout + result.stderr)
        let tap = try Moonflow.run(["test", "--tap"], in: scratch)
        XCTAssertEqual(tap.status, 1, tap.stdout + tap.stderr)
        assertNoControlCharacters(tap.stdout + tap.stderr)
    }
}
