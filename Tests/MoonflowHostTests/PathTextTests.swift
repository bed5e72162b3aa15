import Foundation
@testable import MoonflowHost
import XCTest

/// Path arithmetic that never traps: every string is a path, and each form of the same
/// path (`.`, `./`, `x/..`, a trailing slash) gives the same folder.
final class PathTextTests: XCTestCase {
    func testParentOfEveryForm() {
        let cases: [(String, String)] = [
            (".", ".."), ("./", ".."), ("", ".."), ("..", "../.."), ("../", "../.."), ("../..", "../../.."),
            ("a", "."), ("a/", "."), ("é", "."), ("-", "."), ("./a", "."), ("a/b", "a"), ("a//b/", "a"),
            ("a/./b", "a"), ("a/b/..", "."), ("./init.lua", "."), ("plugins/counter/init.lua", "plugins/counter"),
            ("/", "/"), ("/a", "/"), ("/a/b/", "/a"), ("/..", "/"), ("/a/../b", "/"),
        ]
        for (path, parent) in cases {
            XCTAssertEqual(PathText.parent(of: path), parent, "parent of \(path.debugDescription)")
        }
    }

    func testNormalizedKeepsLeadingParentsAndTheRoot() {
        XCTAssertEqual(PathText.normalized("./plugins//counter/"), "plugins/counter")
        XCTAssertEqual(PathText.normalized("../../x"), "../../x")
        XCTAssertEqual(PathText.normalized("a/../../x"), "../x")
        XCTAssertEqual(PathText.normalized("/../x"), "/x")
        XCTAssertEqual(PathText.normalized("./"), ".")
    }

    func testNameOfADotIsTheFoldersOwnName() {
        let cwd = FileManager.default.currentDirectoryPath
        let own = String(cwd.split(separator: "/").last ?? "/")
        XCTAssertEqual(PathText.name(of: "."), own)
        XCTAssertEqual(PathText.name(of: "./"), own)
        XCTAssertEqual(PathText.name(of: "plugins/counter/"), "counter")
        XCTAssertEqual(PathText.name(of: "./init.lua"), "init.lua")
        XCTAssertEqual(PathText.name(of: "/"), "/")
    }

    func testJoinLeavesNoDotInFront() {
        XCTAssertEqual(PathText.join(".", "init.lua"), "init.lua")
        XCTAssertEqual(PathText.join("./", "init.lua"), "init.lua")
        XCTAssertEqual(PathText.join("/", "x"), "/x")
        XCTAssertEqual(PathText.join("plugins/", "x"), "plugins/x")
    }

    func testFolderWalkFollowsALinkedFolderOnceAndEndsALoop() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("moonflow-walk-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let fm = FileManager.default
        try fm.createDirectory(at: root.appendingPathComponent("real/sub"), withIntermediateDirectories: true)
        try Data().write(to: root.appendingPathComponent("real/sub/a.lua"))
        try Data().write(to: root.appendingPathComponent("real/.hidden.lua"))
        try fm.createSymbolicLink(atPath: root.appendingPathComponent("link").path, withDestinationPath: "real")
        try fm.createSymbolicLink(atPath: root.appendingPathComponent("real/sub/up").path, withDestinationPath: "..")
        XCTAssertEqual(
            FolderWalk.paths(under: root.appendingPathComponent("link").path), ["sub", "sub/a.lua", "sub/up"])
    }
}
