import Foundation
import LuaKit
@testable import MoonflowLua
import Streams
import XCTest

/// The stream methods are written in three places: LuaStream's method table (what a
/// stream has), the LuaLS annotations `moonflow types --luals --api` prints
/// (Sources/MoonflowTool/Types/moonflow_meta.lua: what an editor offers) and
/// docs/lua-api.md's table of methods (what a reader is told). A method added to one and
/// not the others fails here, named with the list that lacks it.
final class StreamMethodListsTests: XCTestCase {
    private static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    private func text(_ path: String) throws -> String {
        try String(contentsOf: Self.root.appendingPathComponent(path), encoding: .utf8)
    }

    /// Every `NAME` of `pattern`'s first capture in `text`.
    private func names(_ pattern: String, in text: String) throws -> Set<String> {
        let regex = try NSRegularExpression(pattern: pattern, options: [.anchorsMatchLines])
        let range = NSRange(text.startIndex..., in: text)
        return Set(
            regex.matches(in: text, range: range).compactMap {
                Range($0.range(at: 1), in: text).map { String(text[$0]) }
            })
    }

    /// The methods a stream has: the table LuaBridge makes the stream class from.
    private func implemented() throws -> Set<String> {
        let lua = try LuaState()
        defer { lua.close() }
        let bridge = try LuaBridge(lua: lua, scheduler: TestScheduler())
        return Set(LuaStreamMethods.table(bridge).keys)
    }

    /// `function Stream:NAME(...) end` in the annotations.
    private func annotated() throws -> Set<String> {
        try names(
            #"^function Stream:([A-Za-z_][A-Za-z0-9_]*)\("#,
            in: try text("Sources/MoonflowTool/Types/moonflow_meta.lua"))
    }

    /// Each `s:NAME(` in the first column of the `| method | does |` table under `## Streams`.
    private func documented() throws -> Set<String> {
        let page = try text("docs/lua-api.md")
        guard let section = page.range(of: "\n## Streams\n"),
            let header = page.range(of: "\n| method | does |\n", range: section.upperBound..<page.endIndex)
        else {
            XCTFail("docs/lua-api.md has no `| method | does |` table under `## Streams`")
            return []
        }
        let rows = page[header.upperBound...].split(separator: "\n", omittingEmptySubsequences: false)
            .prefix { $0.hasPrefix("|") }
            .map { $0.split(separator: "|", omittingEmptySubsequences: true).first.map(String.init) ?? "" }
        return try names(#"s:([A-Za-z_][A-Za-z0-9_]*)\("#, in: rows.joined(separator: "\n"))
    }

    private func assertSame(
        _ a: (String, Set<String>), _ b: (String, Set<String>), file: StaticString = #filePath, line: UInt = #line
    ) {
        XCTAssertEqual(a.1.subtracting(b.1).sorted(), [], "in \(a.0), not in \(b.0)", file: file, line: line)
        XCTAssertEqual(b.1.subtracting(a.1).sorted(), [], "in \(b.0), not in \(a.0)", file: file, line: line)
    }

    func testTheAnnotationsAndTheDocsNameEveryStreamMethodAndNoOther() throws {
        let methods = try implemented()
        XCTAssertTrue(
            methods.isSuperset(of: ["map", "flatMap", "retry", "subscribe"]),
            "the method table as read: \(methods.sorted())")
        let annotations = try annotated()
        let docs = try documented()
        XCTAssertFalse(annotations.isEmpty, "no `function Stream:NAME(` read from moonflow_meta.lua")
        XCTAssertFalse(docs.isEmpty, "no `s:NAME(` read from docs/lua-api.md's table of stream methods")
        assertSame(("LuaStream's method table", methods), ("moonflow_meta.lua's annotations", annotations))
        assertSame(("LuaStream's method table", methods), ("docs/lua-api.md's table of stream methods", docs))
    }
}
