import Foundation
import LuaKit
import MoonflowHost
import MoonflowHostTools
import MoonflowTesting
import XCTest

/// `T.gen`'s generators (Lua/explore.lua), the list its error for an unknown name gives,
/// and the generators docs/testing.md names agree: a generator added to one and not the
/// others fails here, named with the list that lacks it.
final class GeneratorListTests: XCTestCase {
    private static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// A spec's view: the names `pairs(T.gen)` walks, and the error of `T.gen.NAME` for a
    /// name it lacks.
    private func fromLua() throws -> (names: Set<String>, error: String) {
        let host = try FeatureHost(configuration: .init(searchPaths: [], clock: .virtual), switchableClock: true)
        try TestModule.install(in: host)
        let chunk = try host.lua.load(
            string: """
                local T = require "moonflow.test"
                local names = {}
                for name in pairs(T.gen) do names[#names + 1] = name end
                local ok, err = pcall(function() return T.gen.shuffle end)
                assert(not ok, "T.gen.shuffle did not fail")
                return table.concat(names, ","), err
                """, name: "=spec")
        let results = try host.lua.call(chunk)
        let names = results.first?.stringValue ?? "", error = results.dropFirst().first?.stringValue ?? ""
        return (Set(names.split(separator: ",").map(String.init)), error)
    }

    private func assertSame(
        _ a: (String, Set<String>), _ b: (String, Set<String>), file: StaticString = #filePath, line: UInt = #line
    ) {
        XCTAssertEqual(a.1.subtracting(b.1).sorted(), [], "in \(a.0), not in \(b.0)", file: file, line: line)
        XCTAssertEqual(b.1.subtracting(a.1).sorted(), [], "in \(b.0), not in \(a.0)", file: file, line: line)
    }

    func testTheUnknownNameErrorListsEveryGeneratorAndNoOther() throws {
        let (names, error) = try fromLua()
        XCTAssertTrue(names.isSuperset(of: ["integer", "oneOf", "record"]), "T.gen as read: \(names.sorted())")
        // Raised at the spec's line (4), with the names after the prefix.
        let prefix = ":4: T.gen has no 'shuffle'; it has "
        guard let start = error.range(of: prefix) else {
            return XCTFail("not at the spec's line 4, or not the message: \(error)")
        }
        let listed = error[start.upperBound...].components(separatedBy: ", ")
        XCTAssertEqual(listed, listed.sorted(), "the names in order: \(error)")
        assertSame(("T.gen", names), ("its error for an unknown name", Set(listed)))
    }

    func testDocsTestingNamesEveryGeneratorAndNoOther() throws {
        let (names, _) = try fromLua()
        let page = try String(contentsOf: Self.root.appendingPathComponent("docs/testing.md"), encoding: .utf8)
        let regex = try NSRegularExpression(pattern: #"T\.gen\.([A-Za-z_][A-Za-z0-9_]*)"#)
        let documented = Set(
            regex.matches(in: page, range: NSRange(page.startIndex..., in: page)).compactMap {
                Range($0.range(at: 1), in: page).map { String(page[$0]) }
            })
        XCTAssertFalse(documented.isEmpty, "no `T.gen.NAME` read from docs/testing.md")
        assertSame(("T.gen", names), ("docs/testing.md", documented))
    }
}
