import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import XCTest

/// `moonflow test`'s reports as the programs that read them in CI see them: JUnit XML under
/// the rules of the Jenkins xunit plugin's JUnit schema, TAP lines as a TAP 13/14 harness
/// splits them, and the globals a busted spec expects (`arg`, `io.stdout` a real file).
final class ReportReadersTests: ScratchTestCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        try write(
            "plugins/clock/init.lua",
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "clock", initial = { ticks = 0 }, actions = { tick = {} }, mutations = { ticked = {} },
              handle = function() return { type = "ticked" } end,
              reduce = function(state) state.ticks = state.ticks + 1; return state end,
            }
            """)
    }

    private func spec(_ body: String) throws {
        try write("plugins/clock/spec/clock_spec.lua", "describe(\"clock\", function()\n\(body)\nend)\n")
    }

    // MARK: - JUnit

    /// What Jenkins' xunit plugin (its junit-10.xsd) lets each element carry: the attributes it
    /// must have, those it may have, and the elements it may hold. Anything else fails the
    /// plugin's validation, and with it the CI step that reads the report.
    private struct Allowed {
        var required: Set<String> = []
        var optional: Set<String> = []
        var children: Set<String> = []
    }
    private let junitRules: [String: Allowed] = {
        let results: Set<String> = ["type", "message"]
        return [
            "testsuites": Allowed(optional: ["name", "time", "tests", "failures", "errors"], children: ["testsuite"]),
            "testsuite": Allowed(
                required: ["name", "tests", "failures", "errors"],
                optional: [
                    "group", "time", "skipped", "timestamp", "hostname", "id", "package", "file", "log", "url",
                    "version",
                ],
                children: ["testsuite", "properties", "testcase", "system-out", "system-err"]),
            "testcase": Allowed(
                required: ["name"], optional: ["time", "classname", "group"],
                children: [
                    "skipped", "error", "failure", "system-out", "system-err",
                    "rerunFailure", "rerunError", "flakyFailure", "flakyError",
                ]),
            "failure": Allowed(optional: results), "error": Allowed(optional: results),
            "skipped": Allowed(optional: results),
        ]
    }()

    /// Every element's attributes and children, checked against `junitRules`; every `time` a
    /// plain number of seconds with at most three decimals (the schema's form for a suite's
    /// time; readers that parse a case's time take the same).
    private func schemaProblems(_ element: XMLElement, _ problems: inout [String]) {
        let name = element.name ?? "?"
        guard let rule = junitRules[name] else { problems.append("<\(name)> is not a JUnit element"); return }
        let attributes = Set((element.attributes ?? []).compactMap(\.name))
        for missing in rule.required.subtracting(attributes).sorted() { problems.append("<\(name)> lacks \(missing)") }
        for extra in attributes.subtracting(rule.required.union(rule.optional)).sorted() {
            problems.append("<\(name)> has \(extra)")
        }
        if let time = element.attribute(forName: "time")?.stringValue,
            time.range(of: #"^[0-9]+(\.[0-9]{1,3})?$"#, options: .regularExpression) == nil
        {
            problems.append("<\(name)> time=\"\(time)\"")
        }
        for child in element.children ?? [] {
            guard let child = child as? XMLElement else { continue }
            if !rule.children.contains(child.name ?? "") { problems.append("<\(name)> holds <\(child.name ?? "?")>") }
            schemaProblems(child, &problems)
        }
    }

    /// Before, Jenkins' xunit plugin refused the report: `skipped` on `<testsuites>`, a `file` on
    /// every `<testcase>`, and times with four decimals; and a name's newline or tab came back
    /// from any XML reader as a space (a raw newline in an attribute is normalised away), a
    /// message's carriage return as a newline.
    func testTheJUnitReportKeepsToTheXunitSchemaAndNamesComeBackWhole() throws {
        try spec(
            """
              describe("nested", function()
                it("passes", function() end)
                it("two\\nlines\\tand a tab", function() end)
                it("fails <here> & \\"quoted\\"", function() error("first\\r\\nsecond", 0) end)
              end)
              it("rings \\7 a bell", function() assert.are.equal(1, 2) end)
              pending("later")
            """)
        let result = try Moonflow.run(["test", "--junit", "report.xml"], in: scratch)
        XCTAssertEqual(result.status, 1, result.stdout + result.stderr)
        let xml = try XMLDocument(data: Data(contentsOf: scratch.appendingPathComponent("report.xml")))
        let root = try XCTUnwrap(xml.rootElement())
        XCTAssertEqual(root.name, "testsuites")
        var problems: [String] = []
        schemaProblems(root, &problems)
        XCTAssertEqual(problems, [], "what the xunit plugin's schema refuses")

        XCTAssertEqual(root.attribute(forName: "tests")?.stringValue, "5")
        let suite = try XCTUnwrap(try xml.nodes(forXPath: "/testsuites/testsuite").first as? XMLElement)
        XCTAssertEqual(
            suite.attribute(forName: "skipped")?.stringValue, "1", "the count of skipped tests is on the suite")
        XCTAssertEqual(suite.attribute(forName: "file")?.stringValue, "plugins/clock/spec/clock_spec.lua")
        let names = try xml.nodes(forXPath: "//testcase").compactMap {
            ($0 as? XMLElement)?.attribute(forName: "name")?.stringValue
        }
        XCTAssertEqual(
            names, ["passes", "two\nlines\tand a tab", "fails <here> & \"quoted\"", "rings \\x07 a bell", "later"],
            "names as the spec wrote them; a control character XML cannot hold as Lua writes it")
        let error = try XCTUnwrap(try xml.nodes(forXPath: "//testcase/error").first as? XMLElement)
        XCTAssertEqual(error.stringValue, "plugins/clock/spec/clock_spec.lua:5: first\r\nsecond")
        XCTAssertEqual(
            error.attribute(forName: "message")?.stringValue, "plugins/clock/spec/clock_spec.lua:5: first",
            "the first line")
    }

    // MARK: - TAP

    /// A test point as a TAP 13/14 harness reads it (TAP::Parser's rules): the status, then the
    /// description up to the first `#` not escaped with `\`, then a `SKIP` or `TODO` directive.
    private struct TestPoint {
        var ok: Bool
        var description: String
        var directive: String?

        init?(_ line: String) {
            guard let match = line.range(of: #"^(not )?ok [0-9]+( - )?"#, options: .regularExpression) else {
                return nil
            }
            ok = !line.hasPrefix("not ")
            var text = "", rest = Substring(line[match.upperBound...])
            while let c = rest.first {
                if c == "\\", rest.count > 1 {
                    let next = rest[rest.index(after: rest.startIndex)]
                    text += ["n": "\n", "r": "\r", "#": "#", "\\": "\\"][next] ?? "\\\(next)"
                    rest = rest.dropFirst(2)
                } else if c == "#" {
                    let directive = rest.dropFirst().drop { $0 == " " }.prefix(4).uppercased()
                    if directive == "SKIP" || directive == "TODO" { self.directive = directive }
                    break
                } else {
                    text.append(c)
                    rest = rest.dropFirst()
                }
            }
            description = text.trimmingCharacters(in: .whitespaces)
        }
    }

    /// Before, a failing test named `... # TODO ...` passed under every TAP harness (the rest
    /// of its name read as a TODO directive), and a name's newline broke its line in two, the
    /// second half a line no harness reads; so did a message's CRLF line ending in the YAML
    /// block, which also held the message's control characters, which YAML does not allow.
    func testTAPNamesKeepTheirHashesAndNewlinesOnTheirOwnLine() throws {
        try spec(
            """
              it("fails # TODO not really", function() error("boom\\r\\nsecond\\1line", 0) end)
              it("two\\nlines", function() end)
              it("a back\\\\slash # then a hash", function() end)
              pending("later # soon")
            """)
        let result = try Moonflow.run(["test", "--tap"], in: scratch)
        XCTAssertEqual(result.status, 1, result.stdout + result.stderr)
        var inYAML = false
        var points: [TestPoint] = []
        // Split where a harness splits, at each line feed (a Swift Character holds "\r\n" as one).
        for line in result.stdout.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false).map(
            String.init)
        {
            if inYAML {
                inYAML = line != "  ..."
                XCTAssertTrue(line.hasPrefix("  "), "YAML stays indented: \(line)")
                XCTAssertFalse(
                    line.unicodeScalars.contains { $0.value < 0x20 && $0 != "\t" },
                    "YAML holds no control character: \(line.debugDescription)")
                continue
            }
            if line == "  ---" { inYAML = true; continue }
            if let point = TestPoint(line) { points.append(point); continue }
            let known = line == "TAP version 13" || line == "1..4" || line.hasPrefix("#") || line.isEmpty
            XCTAssertTrue(known, "a line no TAP harness reads: \(line.debugDescription) in\n\(result.stdout)")
        }
        XCTAssertEqual(
            points.map(\.description),
            [
                "clock fails # TODO not really", "clock two\nlines",
                "clock a back\\slash # then a hash", "clock later # soon",
            ])
        XCTAssertTrue(
            result.stdout.contains("\n    plugins/clock/spec/clock_spec.lua:2: boom\n    second\\x01line\n  ...\n"),
            result.stdout)
        XCTAssertEqual(points.map(\.ok), [false, true, true, true])
        XCTAssertEqual(points.map(\.directive), [nil, nil, nil, "SKIP"], "only the pending test has a directive")
    }

    // MARK: - busted's globals

    /// Before, `arg` was nil under `moonflow test` and `io.stdout` a table (`io.type` nil), so a
    /// spec (or the code it tests) that checks them as it would under busted failed.
    func testArgAndIoStdoutAreAsBustedGivesThem() throws {
        try spec(
            """
              it("sees busted's globals", function()
                assert.are.equal("table", type(arg))
                assert.are.equal("file", io.type(io.stdout))
                assert.are.equal(io.stdout, io.output())
                io.stdout:write("one ", 2, "\\n")
                io.stdout:write("three ")
                print("four")
                io.write("five\\n")
                io.stdout:setvbuf("full")
                io.stdout:write("six\\n")
                print("seven")
                print(arg[0], #arg, arg[1], arg[#arg])
                io.stdout:write("eight")
              end)
              it("runs after", function() end)
            """)
        let file = "plugins/clock/spec/clock_spec.lua"
        let moonflow = try Moonflow.binary().resolvingSymlinksInPath().path
        let result = try Moonflow.run(["test", "--jobs", "1", file], in: scratch)
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        // And the lint `moonflow test` runs knows them: no "undefined variable 'arg'" (W113),
        // no "undefined field 'stdout.write'" (W143).
        XCTAssertFalse((result.stdout + result.stderr).contains("(W1"), result.stdout + result.stderr)
        let expected = "one 2\nthree four\nfive\nsix\nseven\n\(moonflow)\t3\t--jobs\t\(file)\neight\n"
        XCTAssertTrue(
            result.stdout.hasPrefix(expected + "  ✓ clock sees busted's globals\n  ✓ clock runs after\n"),
            "each write where the spec's output goes, in order, before its test's line:\n" + result.stdout)

        let tap = try Moonflow.run(["test", "--tap", file], in: scratch)
        XCTAssertEqual(tap.status, 0, tap.stdout + tap.stderr)
        XCTAssertTrue(
            tap.stderr.contains("# one 2\n# three four\n# five\n"),
            "under TAP, TAP comments on standard error: " + tap.stderr)
        XCTAssertEqual(tap.stdout.split(separator: "\n").filter { $0.hasPrefix("ok ") }.count, 2, tap.stdout)
    }
}
