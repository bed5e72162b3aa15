import Foundation
@testable import MoonflowServe
import XCTest

/// What `moonflow serve` pushes after a burst of saves: the files the burst names, read as
/// they are then (a new one added, a removed one gone), over the set last published.
final class ServePushTests: XCTestCase {
    private var folder: URL!

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("moonflow-push-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: folder.appendingPathComponent("counter"), withIntermediateDirectories: true)
        try write("return 1", to: "counter/init.lua")
        try write("return 2", to: "counter/util.lua")
        try write("return 3", to: "counter/old.lua")
    }

    override func tearDown() { try? FileManager.default.removeItem(at: folder) }

    private func write(_ text: String, to name: String) throws {
        try Data(text.utf8).write(to: folder.appendingPathComponent(name))
    }

    private func path(_ name: String) -> String { folder.appendingPathComponent(name).path }

    private func server() throws -> DevServer {
        try DevServer(folders: [folder.path]) { _, _ in ([], {}) }
    }

    func testABurstPushesTheFilesItNamesAddedChangedAndRemoved() throws {
        let server = try server()
        let pusher = Pusher(server: server)
        try write("return 20", to: "counter/util.lua")
        try write("return 4", to: "counter/new.lua")
        try FileManager.default.removeItem(atPath: path("counter/old.lua"))
        pusher.saved([path("counter/new.lua"), path("counter/old.lua"), path("counter/util.lua")])
        XCTAssertEqual(
            server.published,
            ["counter/init.lua": "return 1", "counter/util.lua": "return 20", "counter/new.lua": "return 4"])
    }

    func testAFileTheBurstDoesNotNameIsNotReadAgain() throws {
        let server = try server()
        let pusher = Pusher(server: server)
        try write("return 10", to: "counter/init.lua")
        try write("return 20", to: "counter/util.lua")
        pusher.saved([path("counter/util.lua")])
        XCTAssertEqual(server.published["counter/util.lua"], "return 20")
        XCTAssertEqual(
            server.published["counter/init.lua"], "return 1", "read again though the watcher did not name it")
    }

    func testAPathOutsideEveryPluginReadsEveryFileAgain() throws {
        let server = try server()
        let pusher = Pusher(server: server)
        try write("return 10", to: "counter/init.lua")
        pusher.saved([path("elsewhere.lua")])
        XCTAssertEqual(server.published["counter/init.lua"], "return 10")
    }
}
