@testable import MoonflowLua
import XCTest

/// Finding each key of a definition table in its source, for `moonflow check`'s lines.
final class DefinitionSourceTests: XCTestCase {
    func testKeysAreFoundAtTheirLinesPastStringsCommentsAndFunctionBodies() {
        let source = """
            local mf = require "moonflow"
            local note = "strategy = { load = 'x' }"   -- not the table
            return mf.feature {
              name = "chat",
              --[[ actions = { fake = {} } ]]
              actions = {
                send = { text = "str" },   -- a comment with ad = 1
                ["load more"] = { page = "int" },
              },
              handle = function(action)
                local strategy = { load = 1 }
                if action then return { type = "x" } end
              end,
              strategy = {
                load = [[latest]],
                ad = "merge",
              },
            }
            """
        let lines = DefinitionSource.keyLines(in: source, fromLine: 3)
        XCTAssertEqual(lines[["name"]], 4)
        XCTAssertEqual(lines[["actions"]], 6)
        XCTAssertEqual(lines[["actions", "send", "text"]], 7)
        XCTAssertEqual(lines[["actions", "load more", "page"]], 8)
        XCTAssertEqual(lines[["handle"]], 10)
        XCTAssertEqual(lines[["strategy", "load"]], 15)
        XCTAssertEqual(lines[["strategy", "ad"]], 16)
        XCTAssertNil(lines[["actions", "fake"]], "inside a comment")
        XCTAssertNil(lines[["handle", "strategy"]], "inside a function body")
    }

    func testEachProblemGetsItsKeysLineOrTheCallsAndTheyComeInLineOrder() throws {
        let file = NSTemporaryDirectory() + "/mfdef\(UUID().uuidString.prefix(6)).lua"
        try "return mf.feature {\n  name = 'x',\n  strategy = {\n    load = 'lastest',\n  },\n}\n".write(
            toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let located = DefinitionSource.locate(
            [
                .init(message: "bad strategy", path: ["strategy", "load"]),
                .init(message: "no handle", path: ["handle"]),
                .init(message: "bad name", path: ["name"]),
            ], caller: "\(file):1")
        XCTAssertEqual(located, ["\(file):1: no handle", "\(file):2: bad name", "\(file):4: bad strategy"])
    }
}
