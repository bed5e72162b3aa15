import LuaKit
import MoonflowEvents
import MoonflowLua
import XCTest

/// `--format pretty` for people: a traceback shows the plugin's frames, not Moonflow's, and
/// a long payload folds to the width instead of running off the terminal's edge.
final class PrettyOutputTests: XCTestCase {
    func testATracebackShowsThePluginsFramesOnly() {
        let message = """
            plugins/boom/init.lua:3: too big: 2
            stack traceback:
            \t[C]: in function 'error'
            \tplugins/boom/init.lua:3: in upvalue 'check'
            \tplugins/boom/init.lua:17: in field 'reduce'
            \tmoonflow:403: in upvalue 'reduce'
            \tmoonflow.task:12: in function <moonflow.task:10>
            \t(...tail calls...)
            \tmoonflow:537: in function <moonflow:525>
            \t[C]: in ?
            """
        let text = EventPrinter(format: .pretty).render(
            .error(message: message, location: "plugins/boom/init.lua:3"), t: 12)
        XCTAssertEqual(
            text,
            """
                12 ms    ✗ error plugins/boom/init.lua:3: too big: 2
                         stack traceback:
                         plugins/boom/init.lua:3: in upvalue 'check'
                         plugins/boom/init.lua:17: in field 'reduce'
            """)
    }

    func testALongPayloadFoldsToTheWidthIndented() {
        let words = Array(repeating: "word", count: 40).joined(separator: " ")
        let printer = EventPrinter(format: .pretty)
        let text = printer.render(.mutation(["type": "text", "text": .string(LuaString(words))], seq: 1), t: 13)
        let lines = text.components(separatedBy: "\n")
        XCTAssertEqual(lines.count, 3, text)
        XCTAssertTrue(lines.allSatisfy { $0.count <= 100 }, text)
        XCTAssertTrue(lines[0].hasPrefix("    13 ms    • text { text = \"word word"), text)
        XCTAssertTrue(lines.dropFirst().allSatisfy { $0.hasPrefix("             word") }, text)
        // Nothing is lost: the pieces joined again are the line.
        XCTAssertEqual(
            lines.map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " "),
            "13 ms    • text { text = \"\(words)\" }")
        // A terminal's width, when it is one.
        printer.width = 60
        XCTAssertTrue(
            printer.render(.mutation(["type": "text", "text": .string(LuaString(words))], seq: 1), t: 13)
                .components(separatedBy: "\n").allSatisfy { $0.count <= 60 })
    }
}
