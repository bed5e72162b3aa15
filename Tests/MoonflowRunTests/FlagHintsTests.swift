import LuaKit
@testable import MoonflowRun
import XCTest

/// The lower layers say what happened; the command line adds which flag changes it.
final class FlagHintsTests: XCTestCase {
    func testTheLibrariesNameNoFlagAndTheToolAddsTheOneThatChangesTheLimit() {
        let timeout = LuaError.timeout(limitMs: 50, traceback: "stack traceback:\n\t[C]: in ?").description
        let memory = LuaError.memory(limit: 16 << 20).description
        XCTAssertFalse(timeout.contains("--"), timeout)
        XCTAssertFalse(memory.contains("--"), memory)
        XCTAssertEqual(
            FlagHints.add(to: timeout),
            "time limit of 50 ms exceeded: the script ran too long (raise it with --time-limit MS)\nstack traceback:\n\t[C]: in ?"
        )
        XCTAssertEqual(
            FlagHints.add(to: memory),
            "not enough memory: the script went over its 16 MB budget (raise it with --memory-limit MB)")
        XCTAssertEqual(
            FlagHints.add(to: "spec.lua:3: test exceeded its time limit of 10000 ms"),
            "spec.lua:3: test exceeded its time limit of 10000 ms (ten times --time-limit: raise it with moonflow test --time-limit MS)"
        )
        XCTAssertEqual(
            FlagHints.add(
                to: "users.db: the database is read-only; make the file and its folder writable, or store it elsewhere"),
            "users.db: the database is read-only; make the file and its folder writable, or store it elsewhere (moonflow run --db DIR)"
        )
    }

    func testTheInspectorsRefusalsGainTheFlagsThatSizeItsWindow() {
        let jump =
            "jump: frame 0 is older than the inspector keeps (frames 40 to 69); larger limits (frames, bytes) keep more"
        XCTAssertEqual(FlagHints.add(to: jump), jump + " (--inspect-frames N, --inspect-memory MB)")
        let rerun =
            "rerun: this run has sent 3000 actions, more than the inspector keeps to send again (a quarter of its bytes limit, 16384 bytes)"
        XCTAssertEqual(
            FlagHints.add(to: rerun),
            rerun + "; run with a larger --inspect-memory, or record the run (--record) and use moonflow replay")
        XCTAssertEqual(FlagHints.add(to: FlagHints.add(to: rerun)), FlagHints.add(to: rerun), "said once")
    }

    func testAMessageThatAlreadySaysOrNamesNoLimitIsKept() {
        let said = "time limit of 5 ms exceeded (raise it with --time-limit MS)"
        XCTAssertEqual(FlagHints.add(to: said), said)
        XCTAssertEqual(FlagHints.add(to: "attempt to index a nil value"), "attempt to index a nil value")
    }
}
