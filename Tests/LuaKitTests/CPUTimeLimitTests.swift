import Foundation
import LuaKit
import XCTest

/// A call's time is counted on its thread's CPU clock (issue 48, item 19): a call whose thread
/// did not run (a busy machine, or a wait) is not stopped at its limit, while a loop is; a
/// call that blocks is stopped once it returns past the wall-clock backstop.
final class CPUTimeLimitTests: XCTestCase {
    /// Lua that calls `wait` (a Swift function that blocks for `seconds` without running) and
    /// then returns 1.
    private func waitingCall(_ lua: LuaState, seconds: Double) throws -> [LuaValue] {
        let chunk = try lua.load(string: "local wait = ... wait() return 1", name: "waits.lua")
        return try lua.call(
            chunk,
            [
                .function { _ in
                    Thread.sleep(forTimeInterval: seconds); return []
                }
            ])
    }

    /// On the wall clock, a call that waited 600 ms under a 300 ms limit was stopped as soon as
    /// it ran again, as a slow machine stops a healthy script that was not given the CPU.
    func testACallThatWaitsPastItsLimitWithoutRunningIsNotStopped() throws {
        #if os(Linux)
        let lua = try LuaState(timeLimitMs: 300)
        XCTAssertEqual(try waitingCall(lua, seconds: 0.6), [1])
        // A loop is still stopped, in the same state.
        XCTAssertThrowsError(try lua.run(string: "while true do end", name: "spin.lua")) { error in
            guard case .timeout(300, _)? = error as? LuaError else { return XCTFail("\(error)") }
        }
        #endif
    }

    /// The backstop: a call that blocks longer than the limit plus a second stops once it runs again.
    func testACallThatBlocksPastTheBackstopIsStopped() throws {
        let lua = try LuaState(timeLimitMs: 100)
        XCTAssertThrowsError(try waitingCall(lua, seconds: 2.5)) { error in
            guard case .timeout(100, _)? = error as? LuaError else { return XCTFail("\(error)") }
        }
        XCTAssertEqual(try lua.run(string: "return 1 + 1", name: "after.lua"), [2], "the state is usable afterwards")
    }
}
