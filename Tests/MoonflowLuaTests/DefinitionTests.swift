import LuaKit
import MoonflowLua
import XCTest

/// `mf.feature{...}` checks its table where it is written: each error names the field and the
/// plugin's `file:line` (the line of the offending key, else of the `mf.feature` call).
final class DefinitionTests: XCTestCase {
    /// A plugin whose `mf.feature {` call is on line 3, followed by `fields`.
    private func loadError(
        _ fields: String, file: StaticString = #filePath, line: UInt = #line
    ) throws -> (message: String, location: String?, path: String) {
        let h = try Harness([
            "bad/init.lua": """
            local mf = require "moonflow"
            local function noop() end
            return mf.feature {
            \(fields)
            }
            """
        ])
        do {
            try h.load("bad")
            XCTFail("loading succeeded", file: file, line: line)
            return ("", nil, "")
        } catch let e as LuaError {
            return (e.message, e.location, h.path("bad/init.lua"))
        }
    }

    private let valid = [
        "name = 'x'", "initial = {}", "actions = { a = {} }", "mutations = { m = {} }",
        "handle = noop", "reduce = noop",
    ]

    /// The valid fields with `replacements` (key = text, or key = nil to drop it).
    private func fields(_ replacements: [String: String?]) -> String {
        var lines = valid.filter { line in !replacements.keys.contains { line.hasPrefix($0 + " ") } }
        for (_, v) in replacements.sorted(by: { $0.key < $1.key }) { if let v { lines.append(v) } }
        return lines.joined(separator: ",\n") + ","
    }

    private func assertError(_ replacements: [String: String?], _ expected: String, line: UInt = #line) throws {
        let text = fields(replacements)
        let (message, location, path) = try loadError(text, line: line)
        // The replaced key's line when it is written (the call is on line 3), else the call's.
        let written = replacements.values.compactMap { $0 }.first
        let keyLine =
            written.flatMap { w in
                text.split(separator: "\n", omittingEmptySubsequences: false).firstIndex { $0.contains(w) }
            }.map { $0 + 4 } ?? 3
        XCTAssertEqual(location, "\(path):\(keyLine)", line: line)
        XCTAssertEqual(message, "\(path):\(keyLine): \(expected)", line: line)
    }

    func testTheValidBaseLoads() throws {
        let h = try Harness([
            "ok/init.lua":
                "local mf = require 'moonflow'\nlocal function noop() end\nreturn mf.feature {\n\(fields([:]))\n}"
        ])
        XCTAssertNoThrow(try h.load("ok"))
    }

    func testName() throws {
        try assertError(["name": nil], "mf.feature: field 'name' must be a non-empty string (got nil)")
        try assertError(["name": "name = 3"], "mf.feature: field 'name' must be a non-empty string (got number)")
        try assertError(["name": "name = ''"], "mf.feature: field 'name' must be a non-empty string (got string)")
    }

    func testInitial() throws {
        try assertError(["initial": nil], "mf.feature 'x': field 'initial' must be a table, the first state (got nil)")
        try assertError(
            ["initial": "initial = 5"], "mf.feature 'x': field 'initial' must be a table, the first state (got number)")
        let (message, _, _) = try loadError(fields(["initial": "initial = { cb = noop }"]))
        XCTAssertTrue(message.contains("mf.feature 'x': field 'initial' cannot be state: "), message)
        XCTAssertTrue(message.contains("initial.cb"), message)
    }

    func testActionsAndMutations() throws {
        try assertError(
            ["actions": nil],
            "mf.feature 'x': field 'actions' must be a table declaring each action and its fields, e.g. { query = { text = \"string\" } } (got nil)"
        )
        try assertError(
            ["mutations": "mutations = 'm'"],
            "mf.feature 'x': field 'mutations' must be a table declaring each mutation and its fields, e.g. { query = { text = \"string\" } } (got string)"
        )
        try assertError(
            ["actions": "actions = { q = { text = 'strng' } }"],
            "mf.feature 'x': action 'q': field 'text' has unknown type \"strng\" (did you mean \"string\"? use string, integer, number, boolean, table or any, with ? for optional)"
        )
        try assertError(
            ["mutations": "mutations = { m = 'text' }"],
            "mf.feature 'x': mutation 'm': declare its fields as a table, e.g. { text = \"string\" } or {} (got string)"
        )
        try assertError(
            ["actions": "actions = { q = { type = 'string' } }"],
            "mf.feature 'x': action 'q': 'type' is reserved for the action's name")
    }

    func testHandleAndReduce() throws {
        try assertError(["handle": nil], "mf.feature 'x': field 'handle' must be a function (got nil)")
        try assertError(["reduce": "reduce = {}"], "mf.feature 'x': field 'reduce' must be a function (got table)")
    }

    func testEveryIndependentProblemIsListed() throws {
        let (message, _, path) = try loadError(fields(["handle": nil, "reduce": nil]))
        XCTAssertEqual(
            message,
            "\(path):3: mf.feature 'x': field 'handle' must be a function (got nil)\n\(path):3: mf.feature 'x': field 'reduce' must be a function (got nil)"
        )
    }

    /// One `check` shows everything: a bad name and version do not hide the rest.
    func testNameVersionAndTheRestAreListedTogether() throws {
        let (message, _, path) = try loadError(
            fields(["name": "name = ''", "version": "version = 'one'", "handle": nil]))
        // Each at its key's line (the missing `handle` at the call's).
        XCTAssertEqual(
            message,
            """
            \(path):3: mf.feature: field 'handle' must be a function (got nil)
            \(path):8: mf.feature: field 'name' must be a non-empty string (got string)
            \(path):9: mf.feature: field 'version' must be an integer (got string)
            """)
    }

    func testUnknownTopLevelFieldsAreNamedWithTheNearestKnownOne() throws {
        let (message, _, path) = try loadError(
            fields(["effect": "effect = {}", "strategies": "strategies = {}", "colour": "colour = 'red'"]))
        XCTAssertEqual(
            message,
            """
            \(path):10: mf.feature 'x': unknown field 'colour'; mf.feature takes name, version, initial, state, actions, mutations, outputs, handle, reduce, effects, strategy, services, interactors, repositories, migrate, invariants
            \(path):11: mf.feature 'x': unknown field 'effect'; did you mean `effects`?
            \(path):12: mf.feature 'x': unknown field 'strategies'; did you mean `strategy`?
            """)
    }

    /// A malformed strategy entry is one problem, not also an "undeclared action".
    func testAMalformedStrategyIsReportedOnce() throws {
        try assertError(
            ["strategy": "strategy = { stop = 'nope' }"],
            "mf.feature 'x': strategy entries are action = \"merge\" | \"latest\" | \"concat\" | \"exhaust\" (got [\"stop\"] = \"nope\")"
        )
    }

    func testOptionalParts() throws {
        try assertError(["version": "version = '2'"], "mf.feature 'x': field 'version' must be an integer (got string)")
        try assertError(
            ["migrate": "migrate = 1"], "mf.feature 'x': field 'migrate' must be a function when given (got number)")
        try assertError(
            ["effects": "effects = { fetch = 'later' }"],
            "mf.feature 'x': effects.fetch must be a function (got string)")
        try assertError(
            ["services": "services = 3"], "mf.feature 'x': field 'services' must be a table of functions (got number)")
        try assertError(
            ["strategy": "strategy = { a = 'fastest' }"],
            "mf.feature 'x': strategy entries are action = \"merge\" | \"latest\" | \"concat\" | \"exhaust\" (got [\"a\"] = \"fastest\"); did you mean \"latest\"?"
        )
        try assertError(
            ["strategy": "strategy = { b = 'latest' }"],
            "mf.feature 'x': strategy names undeclared action 'b'; declared actions: a")
        try assertError(
            ["strategy": "strategy = 'latest'"],
            "mf.feature 'x': field 'strategy' must be a table of action = strategy (got string)")
    }

    func testNotATable() throws {
        let h = try Harness(["bad/init.lua": "local mf = require 'moonflow'\n\nreturn mf.feature('x')"])
        XCTAssertThrowsError(try h.load("bad")) { error in
            XCTAssertEqual(
                (error as? LuaError)?.message, "\(h.path("bad/init.lua")):3: a definition must be a table (got string)")
        }
    }

    func testInteractorNeedsRequests() throws {
        let h = try Harness(["bad/init.lua": "local mf = require 'moonflow'\nreturn mf.interactor { name = 'ds' }"])
        XCTAssertThrowsError(try h.load("bad")) { error in
            XCTAssertEqual(
                (error as? LuaError)?.message,
                "\(h.path("bad/init.lua")):2: mf.interactor 'ds': field 'requests' must be a table of request handlers (got nil)"
            )
        }
    }

    func testSyntaxErrorsNameTheFileAndLine() throws {
        let h = try Harness([
            "bad/init.lua": "local mf = require 'moonflow'\nreturn mf.feature {\n  name = 'x'\n  initial = {}\n}"
        ])
        XCTAssertThrowsError(try h.load("bad")) { error in
            guard case .syntax(_, let line, let message)? = error as? LuaError else { return XCTFail("\(error)") }
            XCTAssertEqual(line, 4)
            XCTAssertTrue(message.contains("'}' expected"), message)
        }
    }
}
