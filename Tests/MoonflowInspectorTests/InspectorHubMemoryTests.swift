import Foundation
import LuaKit
import MoonflowInspector
import PluginFixtures
import XCTest

/// The actions the hub keeps for `rerun` and `toggle` take at most their quarter of the bytes
/// it is given, counted as memory, not as their text (issue 64: at the default 64 MB, a long
/// `moonflow run --inspect` of small actions grew `moonflow-inspector` by about 250 bytes an
/// action, four times what it counted, until some 275,000 actions).
final class InspectorHubMemoryTests: XCTestCase {
    func testTheActionsKeptForRerunStayWithinTheirQuarterOfTheBytesGiven() throws {
        let bytes = 8 << 20
        let hub = InspectorHub(limits: .init(frames: 10, bytes: bytes))
        let action: LuaValue = ["type": "increment"]
        // What the first JSON written sets up once is not the hub's.
        let warm = InspectorHub(limits: .init(frames: 10, bytes: bytes))
        for i in 1...1_000 { warm.input(action, t: i) }
        let before = try MemoryInUse.bytes()
        var most = 0
        for i in 1...36_000 {
            hub.input(action, t: i)
            if i % 500 == 0 { most = max(most, try MemoryInUse.bytes() - before) }
        }
        XCTAssertLessThan(
            most, bytes / 4 + bytes / 8,
            "the actions kept for rerun grew \(MemoryInUse.measure) by up to \(most) bytes; their share is \(bytes / 4)"
        )
    }
}
