import LuaKit
import MoonflowHost
import MoonflowLua
import MoonflowRun
import XCTest

/// One line of `moonflow run` input: JSON, timed JSON, the prompt's shorthand and commands.
final class InputLineTests: XCTestCase {
    private let actions = try! Schema(
        kind: "action",
        declaration: [
            "add": ["title": "string", "done": "boolean?"],
            "toggle": ["id": "integer"],
            "move": ["x": "number", "y": "number"],
            "clear": [:],
        ])

    private func shorthand(_ line: String) throws -> LuaValue? {
        guard case .action(let value, nil)? = try InputLine.parse(line, shorthand: true, actions: actions) else {
            return nil
        }
        return value
    }

    func testQuotedValuesKeepTheirSpacesAndQuotesAreNotPartOfTheValue() throws {
        XCTAssertEqual(try shorthand(#"add title="buy milk""#), ["type": "add", "title": "buy milk"])
        XCTAssertEqual(
            try shorthand("add title='buy milk' done=true"), ["type": "add", "title": "buy milk", "done": true])
        XCTAssertEqual(try shorthand(#"add title="say \"hi\"\n""#), ["type": "add", "title": "say \"hi\"\n"])
        XCTAssertEqual(
            try shorthand("add title=42"), ["type": "add", "title": "42"], "a field declared string gets a string")
    }

    func testABareValueFillsTheOnlyFieldAndABareFlagIsTrue() throws {
        XCTAssertEqual(try shorthand("toggle 1"), ["type": "toggle", "id": 1])
        XCTAssertEqual(try shorthand("add title=a done"), ["type": "add", "title": "a", "done": true])
        XCTAssertEqual(try shorthand("move x=1.5 y=-2"), ["type": "move", "x": 1.5, "y": -2])
    }

    func testWhatCannotBeReadSaysHowToWriteIt() {
        XCTAssertThrowsError(try InputLine.parse("move 3", shorthand: true, actions: actions)) { error in
            XCTAssertEqual(
                (error as? InputError)?.message,
                "'3': a bare value fills an action's only field; write it as FIELD=VALUE; 'move' has fields x, y")
        }
        XCTAssertThrowsError(try InputLine.parse("clear 1", shorthand: true, actions: actions)) { error in
            XCTAssertEqual(
                (error as? InputError)?.message,
                "'1': a bare value fills an action's only field; 'clear' declares no fields")
        }
        XCTAssertThrowsError(try InputLine.parse(#"add title="open"#, shorthand: true, actions: actions)) { error in
            XCTAssertEqual((error as? InputError)?.message, "a quote \" is not closed")
        }
    }

    func testTimedOnlyWithSendAndNoType() throws {
        XCTAssertEqual(
            try InputLine.parse(#"{"type":"schedule","at":5}"#), .action(["type": "schedule", "at": 5], at: nil))
        XCTAssertEqual(try InputLine.parse(#"{"at":5,"send":{"type":"go"}}"#), .action(["type": "go"], at: 5))
        XCTAssertThrowsError(try InputLine.parse(#"{"at":5}"#))
        XCTAssertEqual(try InputLine.parse("\u{FEFF}" + #"{"type":"go"}"#), .action(["type": "go"], at: nil))
        XCTAssertEqual(try InputLine.parse("   "), nil)
    }

    func testPromptCommands() throws {
        XCTAssertEqual(try InputLine.parse(":advance 250", shorthand: true), .command(.advance(ms: 250)))
        XCTAssertEqual(try InputLine.parse(":run", shorthand: true), .command(.run))
        XCTAssertEqual(try InputLine.parse(":quit", shorthand: true), .command(.quit))
        XCTAssertEqual(try InputLine.parse("help", shorthand: true), .command(.help))
        XCTAssertThrowsError(try InputLine.parse(":advance soon", shorthand: true))
        XCTAssertThrowsError(try InputLine.parse(":advance 5", shorthand: false), "commands are for the prompt only")
    }
}
