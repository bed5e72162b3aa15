import Foundation
import XCTest

/// A temporary folder for one test's files, removed when the test is done.
/// Commands run in it with relative paths: Lua shortens long chunk names
/// ("...tmp/x/init.lua"), and users pass short paths anyway.
///
///     let scratch = try ScratchFolder()
///     try scratch.write("plugins/x/init.lua", source)
///     let result = try Moonflow.run(["check", "plugins/x"], in: scratch.url)
final class ScratchFolder {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("moonflow-e2e-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    /// Writes `bytes` to `relative` (folders made) and returns `relative`.
    @discardableResult
    func write(_ relative: String, _ bytes: Data) throws -> String {
        let file = url.appendingPathComponent(relative)
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try bytes.write(to: file)
        return relative
    }

    @discardableResult
    func write(_ relative: String, _ text: String) throws -> String { try write(relative, Data(text.utf8)) }
}

/// A test case whose every test gets a fresh `ScratchFolder`.
class ScratchTestCase: XCTestCase {
    private var folder: ScratchFolder!
    var scratch: URL { folder.url }

    override func setUpWithError() throws { folder = try ScratchFolder() }
    override func tearDownWithError() throws { folder = nil }

    @discardableResult
    func write(_ relative: String, _ text: String) throws -> String { try folder.write(relative, text) }

    @discardableResult
    func write(_ relative: String, _ bytes: Data) throws -> String { try folder.write(relative, bytes) }
}
