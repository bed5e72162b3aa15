import LuaKit
import MoonflowTesting
import XCTest

/// The Swift test store example of docs/testing.md, run as written (with the plugins folder found from here).
final class ReadmeStoreTests: XCTestCase {
    func testReadmeStoreExample() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let plugins = root.appendingPathComponent("plugins").path

        // --- docs/testing.md: From Swift: FeatureStore (searchPaths: ["plugins"] there) ---
        let store = try FeatureStore("counter", searchPaths: [plugins])
        try store.send(["type": "increment", "by": 9]) { $0["count"] = 9 }
        try store.send(["type": "incrementLater", "ms": 50])
        store.advance(by: 50)
        try store.receive(["type": "add", "n": 1]) { $0["count"] = 10 }
        try store.receiveEffect(["type": "milestone", "count": 10])
        try store.finish()
        // --- end ---

        XCTAssertEqual(
            store.log.mutations.map(\.cause), [["type": "increment", "by": 9], ["type": "incrementLater", "ms": 50]])
    }
}
