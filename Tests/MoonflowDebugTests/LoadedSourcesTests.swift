import Foundation
@testable import MoonflowDebug
import XCTest

/// What a run loaded, looked at again before going back: an edit, a new file or a removed one
/// in the plugin's folder is named; files elsewhere are not looked at.
final class LoadedSourcesTests: XCTestCase {
    private var folder: URL!

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("mf-sources-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: folder.appendingPathComponent("app/lib"), withIntermediateDirectories: true)
        try "return 1\n".write(to: folder.appendingPathComponent("app/init.lua"), atomically: true, encoding: .utf8)
        try "return 2\n".write(to: folder.appendingPathComponent("app/lib/util.lua"), atomically: true, encoding: .utf8)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: folder) }

    func testAnEditANewFileAndARemovedOneAreNamedAndNothingElseIs() throws {
        let app = folder.appendingPathComponent("app")
        // From a file inside the plugin: its folder (the nearest one up with an init.lua) is looked at.
        let sources = LoadedSources(for: [app.appendingPathComponent("lib/util.lua").path])
        XCTAssertNil(sources.changed())
        try "not lua".write(to: app.appendingPathComponent("notes.txt"), atomically: true, encoding: .utf8)
        try "return 3\n".write(to: folder.appendingPathComponent("elsewhere.lua"), atomically: true, encoding: .utf8)
        XCTAssertNil(sources.changed(), "neither a .lua file of the plugin")

        try "return 20\n".write(to: app.appendingPathComponent("lib/util.lua"), atomically: true, encoding: .utf8)
        XCTAssertEqual(sources.changed(), app.appendingPathComponent("lib/util.lua").path + " changed")
        try "return 2\n".write(to: app.appendingPathComponent("lib/util.lua"), atomically: true, encoding: .utf8)
        XCTAssertNil(sources.changed(), "the same bytes again")

        try "return 4\n".write(to: app.appendingPathComponent("extra.lua"), atomically: true, encoding: .utf8)
        XCTAssertEqual(sources.changed(), app.appendingPathComponent("extra.lua").path + " was added")
        try FileManager.default.removeItem(at: app.appendingPathComponent("extra.lua"))
        try FileManager.default.removeItem(at: app.appendingPathComponent("init.lua"))
        XCTAssertEqual(sources.changed(), app.appendingPathComponent("init.lua").path + " was removed")
    }
}
