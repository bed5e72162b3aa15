import Foundation
import LuaKit
import MoonflowHost
import MoonflowLua
import MoonflowRun
import XCTest

/// The prompt's `:reload`, `:state` and `:help`.
final class PromptCommandTests: XCTestCase {
    func testReloadStateAndHelpAtThePrompt() throws {
        let dir = (NSTemporaryDirectory() as NSString).appendingPathComponent("mfprompt\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = (dir as NSString).appendingPathComponent("plugins/tally/init.lua")
        try FileManager.default.createDirectory(
            atPath: (file as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        func source(_ step: Int) -> String {
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "tally", initial = { count = 0, tags = { "a" } },
              actions = { add = { by = "integer?" } }, mutations = { added = { n = "integer" } },
              handle = function(a) return { type = "added", n = (a.by or 1) * \(step) } end,
              reduce = function(s, m) s.count = s.count + m.n; return s end,
            }
            """
        }
        try source(1).write(toFile: file, atomically: true, encoding: .utf8)
        let out = Lines()
        var options = FeatureRun.Options(path: (dir as NSString).appendingPathComponent("plugins/tally"))
        options.format = .jsonl
        var lines = ["add", ":state", ":help", ":nope"].makeIterator()
        let run = FeatureRun(
            options: options, input: InputSource(interactive: true) { lines.next() }, write: { out.append($0) })
        XCTAssertEqual(run.run(), 0, "an unknown command typed at the prompt is reported, not a failure of the session")
        let text = out.all.joined(separator: "\n")
        XCTAssertTrue(text.contains("{\n  \"count\": 1,\n  \"tags\": [\n    \"a\"\n  ]\n}"), text)
        XCTAssertTrue(text.contains("  :reload                load the plugin's code again, keeping the state"), text)
        XCTAssertTrue(text.contains("  add by=integer?"), text)
        XCTAssertTrue(
            text.contains(
                "unknown command ':nope'; commands: help, :advance MS, :run, :reload, :restart, :state, :quit"), text)

        // :reload picks up a change made before it.
        try source(1).write(toFile: file, atomically: true, encoding: .utf8)
        let out2 = Lines()
        var script = ["add", "!edit", ":reload", "add", ":state"].makeIterator()
        let edited = source(5)
        let input = InputSource(interactive: true) {
            let line = script.next()
            if line == "!edit" { try? edited.write(toFile: file, atomically: true, encoding: .utf8); return "" }
            return line
        }
        let run2 = FeatureRun(options: options, input: input, write: { out2.append($0) })
        XCTAssertEqual(run2.run(), 0)
        let text2 = out2.all.joined(separator: "\n")
        XCTAssertTrue(text2.contains(#""event":"reload""#), text2)
        XCTAssertTrue(text2.contains("\"count\": 6"), text2)

        // :restart starts over from initial with the code as it is now.
        let out3 = Lines()
        var restart = ["add", "add", ":restart", "add", ":state"].makeIterator()
        let run3 = FeatureRun(
            options: options, input: InputSource(interactive: true) { restart.next() }, write: { out3.append($0) })
        XCTAssertEqual(run3.run(), 0)
        let text3 = out3.all.joined(separator: "\n")
        XCTAssertTrue(text3.contains("{\n  \"count\": 5,"), "one add of 5 after the restart: \(text3)")
    }
}

private final class Lines: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    func append(_ line: String) { lock.withLock { lines.append(line) } }
    var all: [String] { lock.withLock { lines } }
}
