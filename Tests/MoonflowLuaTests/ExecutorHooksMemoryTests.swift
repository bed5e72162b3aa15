import Foundation
import LuaKit
import MoonflowLua
import Streams
import PluginFixtures
import XCTest

/// A host on a queue executor asks its bridge on every send whether the caller is on the
/// state executor, and runs Swift results through the bridge's performer. Each of those
/// reads once wrapped the stored closure in two more conversion thunks, kept for the
/// bridge's life: memory that grew with every action, and a chain that every later call
/// walked, until the stack overflowed after a few hundred thousand actions.
final class ExecutorHooksMemoryTests: XCTestCase {
    func testAskingTheExecutorCheckAndThePerformerKeepsNothing() throws {
        let lua = try LuaState()
        defer { lua.close() }
        let bridge = try LuaBridge(lua: lua, scheduler: TestScheduler())
        bridge.setExecutorCheck { true }
        bridge.performer = { $0() }
        for _ in 0..<1_000 { _ = bridge.isOnExecutor; _ = bridge.performer }
        let before = try MemoryInUse.bytes()
        var ran = 0
        for _ in 0..<50_000 {
            XCTAssertTrue(bridge.isOnExecutor)
            bridge.performer? { ran += 1 }
        }
        let grown = try MemoryInUse.bytes() - before
        XCTAssertEqual(ran, 50_000)
        XCTAssertLessThan(
            grown, 1 << 20, "50,000 sends grew \(MemoryInUse.measure) by \(grown) bytes (\(grown / 50_000) per send)")
    }
}
