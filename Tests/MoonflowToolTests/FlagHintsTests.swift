import LuaKit
@testable import MoonflowTool
import XCTest

/// The lower layers say what happened; the command line adds which flag changes it.
final class FlagHintsTests: XCTestCase {
    func testTheLibrariesNameNoFlagAndTheToolAddsTheOneThatChangesTheLimit() {
        let timeout = LuaError.timeout(limitMs: 50, traceback: "stack traceback:\n\t[C]: in ?").description
        let memory = LuaError.memory(limit: 16 << 20).description
        XCTAssertFalse(timeout.contains("--"), timeout)
        XCTAssertFalse(memory.contains("--"), memory)
        XCTAssertEqual(FlagHints.add(to: timeout),
                       "time limit of 50 ms exceeded: the script ran too long (raise it with --time-limit MS)\nstack traceback:\n\t[C]: in ?")
        XCTAssertEqual(FlagHints.add(to: memory), "not enough memory: the script went over its 16 MB budget (raise it with --memory-limit MB)")
        XCTAssertEqual(FlagHints.add(to: "spec.lua:3: test exceeded its time limit of 10000 ms"),
                       "spec.lua:3: test exceeded its time limit of 10000 ms (ten times --time-limit: raise it with moonflow test --time-limit MS)")
        XCTAssertEqual(FlagHints.add(to: "users.db: the database is read-only; make the file and its folder writable, or store it elsewhere"),
                       "users.db: the database is read-only; make the file and its folder writable, or store it elsewhere (moonflow run --db DIR)")
    }

    func testAMessageThatAlreadySaysOrNamesNoLimitIsKept() {
        let said = "time limit of 5 ms exceeded (raise it with --time-limit MS)"
        XCTAssertEqual(FlagHints.add(to: said), said)
        XCTAssertEqual(FlagHints.add(to: "attempt to index a nil value"), "attempt to index a nil value")
    }
}
