import Foundation
import LuaKit
import Synchronization
@testable import MoonflowRun
import XCTest

/// What stuck calls leave behind (issue 48, item 12): each stuck call kept its whole Lua state
/// for good, and nothing capped them. Now each is let go once its call returns, and a run
/// stops rebuilding at the cap.
final class AbandonedStatesTests: XCTestCase {
    private final class Held: @unchecked Sendable {}

    func testWhatAStuckCallLeftBehindIsLetGoOnceItsCallReturns() {
        let states = AbandonedStates(limit: 4)
        let running = Atomic<Bool>(true)
        weak var weakHeld: Held?
        do {
            let held = Held()
            weakHeld = held
            XCTAssertTrue(states.keep([held], while: { running.load(ordering: .acquiring) }))
        }
        states.release()
        XCTAssertNotNil(weakHeld, "kept while its call runs")
        running.store(false, ordering: .releasing)
        states.release()
        XCTAssertNil(weakHeld, "let go once its call returned")
        XCTAssertEqual(states.count, 0)
    }

    func testTheCapCountsOnlyStatesWhoseCallStillRuns() {
        let states = AbandonedStates(limit: 3)
        let returned = Atomic<Bool>(false)
        XCTAssertTrue(states.keep([Held()], while: { !returned.load(ordering: .acquiring) }))
        XCTAssertTrue(states.keep([Held()], while: { !returned.load(ordering: .acquiring) }))
        XCTAssertFalse(states.keep([Held()], while: { true }), "the third left behind at once reaches the cap")
        returned.store(true, ordering: .releasing)
        XCTAssertTrue(states.keep([Held()], while: { true }), "the two that returned were let go: room again")
        XCTAssertEqual(states.count, 2)
    }

    /// A real stuck state: a Swift function that blocks until told, under a short limit.
    func testAStuckLuaStateIsInItsCallUntilTheCallReturns() throws {
        let call = BlockingCall(lua: try LuaState(timeLimitMs: 50))
        let returned = DispatchSemaphore(value: 0)
        Thread {
            call.run(); returned.signal()
        }.start()
        let giveUp = Date().addingTimeInterval(30)
        while !call.lua.isStuck, Date() < giveUp { _ = returned.wait(timeout: .now() + .milliseconds(20)) }
        XCTAssertTrue(call.lua.isStuck)
        XCTAssertTrue(call.lua.isInCall, "stuck inside its call")
        call.gate.signal()
        returned.wait()
        XCTAssertFalse(call.lua.isInCall, "the call returned")
    }

    private final class BlockingCall: @unchecked Sendable {
        let lua: LuaState
        let gate = DispatchSemaphore(value: 0)
        init(lua: LuaState) { self.lua = lua }
        func run() {
            let gate = self.gate
            guard let chunk = try? lua.load(string: "local wait = ... wait()", name: "blocks.lua") else { return }
            _ = try? lua.call(
                chunk,
                [
                    .function { _ in
                        gate.wait(); return []
                    }
                ])
        }
    }
}
