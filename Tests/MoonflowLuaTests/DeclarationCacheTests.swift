import LuaKit
import MoonflowLua
import XCTest

/// A definition read again with the same declarations takes the schemas compiled the first
/// time (`DeclarationCache`: each run of `T.explore` loads its plugin afresh), and yet checks
/// as a fresh read would: a changed declaration is compiled anew, a declaration with a
/// problem is reported on every load.
final class DeclarationCacheTests: XCTestCase {
    private func plugin(_ name: String, field: String) -> String {
        """
        local mf = require "moonflow"
        return mf.feature {
          name = "\(name)",
          initial = { n = 0 },
          state = { n = "integer" },
          actions = { set = { n = "\(field)" } },
          mutations = { set = { n = "\(field)" } },
          handle = function(action) return { type = "set", n = action.n } end,
          reduce = function(state, m) state.n = m.n end,
        }
        """
    }

    func testAReadDeclarationIsCompiledOnce() throws {
        let declaration: LuaValue = ["cached": ["label": "string", "count": "integer?"]]
        var made = 0
        let first = try DeclarationCache.schema(kind: "action", declaration: declaration) {
            made += 1
            return try Schema(kind: "action", declaration: declaration)
        }
        let second = try DeclarationCache.schema(kind: "action", declaration: declaration) {
            made += 1
            return try Schema(kind: "action", declaration: declaration)
        }
        XCTAssertEqual(made, 1)
        XCTAssertEqual(first.shapes, second.shapes)
        // Another kind is another schema: its messages name mutations.
        _ = try DeclarationCache.schema(kind: "mutation", declaration: declaration) {
            made += 1
            return try Schema(kind: "mutation", declaration: declaration)
        }
        XCTAssertEqual(made, 2)
    }

    func testTheCacheKeepsAtMostItsLimit() throws {
        for i in 0..<(DeclarationCache.limit * 2) {
            let declaration: LuaValue = ["limit\(i)": [:]]
            _ = try DeclarationCache.schema(kind: "action", declaration: declaration) {
                try Schema(kind: "action", declaration: declaration)
            }
            XCTAssertLessThanOrEqual(DeclarationCache.count, DeclarationCache.limit)
        }
    }

    func testAChangedDeclarationChecksAsWritten() throws {
        let h = try Harness([
            "before/init.lua": plugin("same", field: "integer"), "after/init.lua": plugin("same", field: "string"),
        ])
        try h.load("before")
        XCTAssertNoThrow(try h.feature(sending: ["type": "set", "n": 1]))
        try h.load("after")
        XCTAssertThrowsError(try h.feature(sending: ["type": "set", "n": 1])) { error in
            XCTAssertTrue("\(error)".contains("must be a string"), "\(error)")
        }
        XCTAssertNoThrow(try h.feature(sending: ["type": "set", "n": "one"]))
    }

    func testADeclarationWithAProblemIsReportedEveryTime() throws {
        let h = try Harness(["bad/init.lua": plugin("bad", field: "integr")])
        for _ in 0..<2 {
            XCTAssertThrowsError(try h.load("bad")) { error in
                XCTAssertTrue("\(error)".contains("integr"), "\(error)")
            }
        }
    }
}

extension Harness {
    /// Sends `action` to the feature loaded last.
    fileprivate func feature(sending action: LuaValue) throws { try feature.send(action) }
}
