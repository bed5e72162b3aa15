import LuaKit
import PluginFixtures
import MoonflowLua
import XCTest

/// `mf.just`, `empty`, `never`, `fail`, `from`, `concat`, `merge`, `combineLatest`, `timer`,
/// `interval` under the virtual clock: each value with its exact time, `|` for completion.
final class StreamConstructorTests: XCTestCase {
    func testJustSendsOneValueAndCompletes() throws {
        XCTAssertEqual(try Probe.run("return mf.just(7)"), ["0:7", "0:|"])
        XCTAssertEqual(try Probe.run("return mf.just { a = 1, list = { 1, 2 } }"), [#"0:{"a":1,"list":[1,2]}"#, "0:|"])
    }

    func testEmptyOnlyCompletes() throws {
        XCTAssertEqual(try Probe.run("return mf.empty()"), ["0:|"])
    }

    func testNeverSendsNothingAndKeepsTheFeatureBusy() throws {
        let h = try Harness(["probe/init.lua": Probe.source("return mf.never()")])
        try h.load()
        try h.send(["type": "go"])
        h.advance(to: 10_000)
        XCTAssertEqual(h.log.values, [])
        XCTAssertFalse(h.feature.isIdle, "a never-ending stream is still in flight")
    }

    func testFailReportsItsValueAsAnErrorWithWhereItWasCalled() throws {
        let h = try Harness(["probe/init.lua": Probe.source("return mf.fail('boom')")])
        try h.load()
        try h.send(["type": "go"])
        XCTAssertEqual(h.log.values, ["0:error:boom"])
        XCTAssertEqual(h.log.errors.first?.location, h.path("probe/init.lua") + ":10", "the line that called mf.fail")
        XCTAssertEqual(h.state["seen"]?.tableValue?.isEmpty, true, "a failed stream changes nothing")
    }

    func testFromSendsEachItemInOrder() throws {
        XCTAssertEqual(try Probe.run("return mf.from { 'a', 'b', 3 }"), ["0:a", "0:b", "0:3", "0:|"])
        XCTAssertEqual(try Probe.run("return mf.from {}"), ["0:|"])
    }

    func testFromRejectsANonTable() throws {
        try Probe.assertFails("return mf.from(3)", "bad argument #1 to 'from' (table expected, got number)")
    }

    func testConcatRunsOneAfterAnother() throws {
        let values = try Probe.run("return mf.concat(mf.timer(100, 'a'), mf.just('b'), mf.timer(50, 'c'))")
        XCTAssertEqual(values, ["100:a", "100:b", "150:c", "150:|"])
    }

    func testMergeInterleavesByTime() throws {
        let values = try Probe.run("return mf.merge(mf.timer(100, 'a'), mf.timer(50, 'b'), mf.just('c'))")
        XCTAssertEqual(values, ["0:c", "50:b", "100:a", "100:|"])
    }

    func testCombineLatestSendsAListOnceEveryStreamHasAValue() throws {
        let values = try Probe.run("return mf.combineLatest(mf.interval(100):take(3), mf.timer(150, 'x'))")
        XCTAssertEqual(values, [#"150:[0,"x"]"#, #"200:[1,"x"]"#, #"300:[2,"x"]"#, "300:|"])
    }

    func testTimerDefaultsToZeroAndCarriesAValue() throws {
        XCTAssertEqual(try Probe.run("return mf.timer(250)"), ["250:0", "250:|"])
        XCTAssertEqual(try Probe.run("return mf.timer(40, { n = 1 })"), [#"40:{"n":1}"#, "40:|"])
        XCTAssertEqual(try Probe.run("return mf.timer(0, 'now')"), ["0:now", "0:|"])
    }

    func testIntervalTicksEveryPeriodFromZero() throws {
        XCTAssertEqual(try Probe.run("return mf.interval(100):take(3)"), ["100:0", "200:1", "300:2", "300:|"])
    }

    func testIntervalNeedsAPositivePeriod() throws {
        try Probe.assertFails("return mf.interval(0)", "bad argument #1 to 'interval' (period must be positive)")
    }

    func testConstructorsRejectNonStreams() throws {
        try Probe.assertFails(
            "return mf.merge(mf.just(1), 2)", "bad argument #2 to 'merge' (stream expected, got number)")
    }
}
