import Foundation
import XCTest

/// The files `moonflow types` generates into the repository (listed in `types/manifest`) are
/// what the command prints now: a change to a plugin's declarations without `scripts/types`
/// fails here, naming the file and the command that updates it. Also the command's usage
/// errors and what it prints, as a user sees them.
final class GeneratedTypesGoldenTests: XCTestCase {
    struct Entry {
        let output: String
        let arguments: [String]
    }

    static func manifest() throws -> [Entry] {
        let text = try String(contentsOf: Moonflow.root.appendingPathComponent("types/manifest"), encoding: .utf8)
        return text.split(separator: "\n").compactMap { line -> Entry? in
            guard !line.hasPrefix("#"), let colon = line.firstIndex(of: ":") else { return nil }
            return Entry(output: String(line[..<colon]),
                         arguments: line[line.index(after: colon)...].split(separator: " ").map(String.init))
        }
    }

    func testEveryCheckedInFileIsWhatTheCommandGeneratesNow() throws {
        let entries = try Self.manifest()
        XCTAssertGreaterThanOrEqual(entries.count, 17, "types/manifest lists the generated files")
        for entry in entries {
            let command = "moonflow types " + entry.arguments.joined(separator: " ")
            let result = try Moonflow.run(["types"] + entry.arguments)
            XCTAssertEqual(result.status, 0, "\(command) failed: \(result.stderr)")
            guard let checkedIn = try? String(contentsOf: Moonflow.root.appendingPathComponent(entry.output), encoding: .utf8) else {
                XCTFail("\(entry.output) is missing; run scripts/types (it runs \(command) -o \(entry.output))")
                continue
            }
            if checkedIn != result.stdout {
                XCTFail("""
                    \(entry.output) is not what `\(command)` generates now; run scripts/types to update it \
                    (- checked in, + generated):
                    \(Moonflow.diff(expected: checkedIn, actual: result.stdout))
                    """)
            }
        }
    }

    func testEveryExamplePluginHasSwiftTypesAndLuaLSAnnotations() throws {
        let entries = try Self.manifest()
        for plugin in try GoldenRunTests.plugins() {
            for mode in ["--swift", "--luals"] {
                XCTAssertTrue(entries.contains { $0.arguments == [mode, "plugins/\(plugin)"] },
                              "types/manifest has no `\(mode) plugins/\(plugin)` line; add one and run scripts/types")
            }
        }
    }

    func testWithoutAModeItSaysWhichToGive() throws {
        let result = try Moonflow.run(["types", "plugins/counter"])
        XCTAssertEqual(result.status, 2)
        XCTAssertTrue(result.stderr.contains("--lua (the state declaration), --swift (Swift types) or --luals"), result.stderr)
        XCTAssertTrue(result.stderr.contains("moonflow types --swift plugins/counter"), result.stderr)
    }

    func testWithoutAPluginItShowsOne() throws {
        let result = try Moonflow.run(["types", "--swift"])
        XCTAssertEqual(result.status, 2)
        XCTAssertTrue(result.stderr.contains("moonflow types --swift needs a plugin: moonflow types --swift plugins/counter"), result.stderr)
        let missing = try Moonflow.run(["types", "--lua", "plugins/nope"])
        XCTAssertEqual(missing.status, 2)
        XCTAssertTrue(missing.stderr.contains("plugins/nope does not exist"), missing.stderr)
    }

    func testLuaPrintsTheDeclaredStateOrTheOneInitialSuggests() throws {
        let declared = try Moonflow.run(["types", "--lua", "plugins/counter"])
        XCTAssertEqual(declared.status, 0, declared.stderr)
        XCTAssertEqual(declared.stdout, "  -- The state `counter` (plugins/counter/init.lua) declares.\n  state = { count = \"integer\" },\n")

        let scratch = try ScratchFolder()
        let file = scratch.url.appendingPathComponent("todo.lua")
        try """
            local mf = require "moonflow"
            return mf.feature {
              name = "todo", initial = { items = { { id = 1, text = "milk" } }, filter = "all" },
              actions = {}, mutations = {},
              handle = function() end, reduce = function(s) return s end,
            }
            """.write(to: file, atomically: true, encoding: .utf8)
        let inferred = try Moonflow.run(["types", "--lua", file.path])
        XCTAssertEqual(inferred.status, 0, inferred.stderr)
        XCTAssertTrue(inferred.stdout.hasPrefix("  -- Inferred from `initial` of `todo` (\(file.path))"), inferred.stdout)
        XCTAssertTrue(inferred.stdout.contains("""
              state = {
                filter = "string",
                items = { "list", of = {
                  id = "integer",
                  text = "string",
                } },
              },
            """), inferred.stdout)
    }

    func testOutputGoesToTheFileGiven() throws {
        let scratch = try ScratchFolder()
        let out = scratch.url.appendingPathComponent("counter.lua").path
        let result = try Moonflow.run(["types", "--luals", "plugins/counter", "-o", out])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, "")
        let text = try String(contentsOfFile: out, encoding: .utf8)
        XCTAssertTrue(text.contains("---@class CounterAction.increment\n---@field type \"increment\"\n---@field by? integer\n"), text)
        XCTAssertTrue(text.contains("---@alias CounterEffect CounterEffect.milestone"), text)
    }
}
