import MoonflowHost
import MoonflowHostTools
import LuaKit
import MoonflowLua
import XCTest

/// A state read from another thread sees every reduce whose effect it has seen, while the
/// writes wait in Lua (no state listener) and the loop, out of work, is taking them into the
/// snapshot at that very moment: the read waits for that instead of returning the snapshot
/// from before.
final class PendingWritesReadTests: XCTestCase {
    func testAStateReadRightAfterAnEffectHasTheReduceThatSentIt() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let host = try FeatureHost(
            configuration: .init(searchPaths: [root.appendingPathComponent("plugins").path], clock: .real))
        let counter = try await host.load("counter")
        var effects = counter.effects.makeAsyncIterator()
        counter.start()
        // Each round leaves a small window (the loop taking the writes as the reader reads);
        // 5,000 rounds met it in each of five runs before the fix.
        for round in 1...5000 {
            try counter.send(["type": "increment", "by": 10])
            let effect = await effects.next()
            XCTAssertEqual(effect, ["type": "milestone", "count": .integer(Int64(10 * round))])
            let count = counter.state["count"]
            guard count == .integer(Int64(10 * round)) else {
                return XCTFail(
                    "round \(round): the milestone of count \(10 * round) arrived, but the state read after it has count \(count.map { "\($0)" } ?? "nil")"
                )
            }
        }
    }
}
