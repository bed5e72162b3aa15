import Foundation
import LuaKit
import MoonflowLua
import XCTest

/// The boundary between dispatch.lua and Swift is named, not positional: the table it returns
/// has exactly the fields `LuaDispatch` reads, and the codes that cross per call carry the
/// same names on both sides. A field inserted on one side only fails the load, naming it,
/// instead of shifting every field after it.
final class DispatchBoundaryTests: XCTestCase {
    private static let dispatchText = String(decoding: HostChunks.dispatch.source, as: UTF8.self)

    /// dispatch.lua's text with `edit` applied, as a chunk (its bytecode no longer matches, so
    /// the text is compiled).
    private func dispatch(_ edit: (String) -> String) -> PrecompiledChunk {
        PrecompiledChunk(source: Array(edit(Self.dispatchText).utf8), compiled: [], name: "moonflow")
    }

    private func loadFailure(_ chunk: PrecompiledChunk) -> String? {
        do { _ = try LuaDispatch(try LuaState(), chunk: chunk); return nil } catch { return "\(error)" }
    }

    func testTheShippedDispatchLoadsWithEveryFieldReadByName() throws {
        XCTAssertNil(loadFailure(HostChunks.dispatch))
        XCTAssertNil(loadFailure(dispatch { $0 }), "the text itself, compiled")
    }

    func testAFieldInsertedInDispatchLuaFailsTheLoadNamingIt() throws {
        let returned = "return {\n"
        XCTAssertEqual(Self.dispatchText.components(separatedBy: returned).count, 2, "dispatch.lua returns one table")
        let failure = try XCTUnwrap(
            loadFailure(
                dispatch { $0.replacingOccurrences(of: returned, with: returned + "  inserted = function() end,\n") }))
        XCTAssertTrue(failure.contains("'inserted'") && failure.contains("Swift does not read"), failure)
    }

    func testAValueWithoutANameInDispatchLuaFailsTheLoad() throws {
        let failure = try XCTUnwrap(
            loadFailure(dispatch { $0.replacingOccurrences(of: "return {\n", with: "return {\n  function() end,\n") }))
        XCTAssertTrue(failure.contains("1 value without a name"), failure)
    }

    func testAFieldSwiftReadsThatDispatchLuaLacksFailsTheLoadNamingIt() throws {
        let failure = try XCTUnwrap(
            loadFailure(dispatch { $0.replacingOccurrences(of: "  undo = undo, ", with: "  ") }))
        XCTAssertTrue(failure.contains("exports no 'undo'"), failure)
    }

    func testAReduceOutcomeRenamedOrRenumberedInLuaFailsTheLoad() throws {
        let renamed = try XCTUnwrap(
            loadFailure(dispatch { $0.replacingOccurrences(of: "pending = pending }", with: "waiting = pending }") }))
        XCTAssertTrue(
            renamed.contains("reduceOutcomes") && renamed.contains("waiting = 3") && renamed.contains("pending = 3"),
            renamed)
        let renumbered = try XCTUnwrap(
            loadFailure(
                dispatch {
                    $0.replacingOccurrences(
                        of: "stepStages = { outside = outside,", with: "stepStages = { outside = 7,")
                }))
        XCTAssertTrue(renumbered.contains("stepStages") && renumbered.contains("outside = 7"), renumbered)
    }

    /// The codes are named alike in the Lua source that uses them, not only in the table Swift checks.
    func testEveryCaseOfTheCrossingCodesIsALocalOfDispatchLua() {
        for name in ReduceOutcome.allCases.map({ "\($0)" }) + StepStage.allCases.map({ "\($0)" }) {
            XCTAssertTrue(Self.dispatchText.contains("\(name) <const>"), "dispatch.lua has no `local \(name) <const>`")
        }
    }

    func testExportsReadOnlyTheirNamedFields() throws {
        let lua = try LuaState()
        let chunk = try lua.load(string: "return { a = 1, b = 2 }", name: "exports")
        var exports = try lua.call(chunk, []) { try DispatchExports($0, at: 1, in: lua, from: "exports.lua") }
        _ = try exports.take("a")
        XCTAssertThrowsError(try exports.finish()) {
            XCTAssertTrue("\($0)".contains("exports.lua exports 'b'"), "\($0)")
        }
        XCTAssertThrowsError(try exports.take("c")) { XCTAssertTrue("\($0)".contains("exports no 'c'"), "\($0)") }
        _ = try exports.take("b")
        XCTAssertNoThrow(try exports.finish())
    }
}
