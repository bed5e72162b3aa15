import LuaKit
import PluginFixtures
import MoonflowLua
import XCTest

/// Every stream method under the virtual clock, with exact times (RxSwift semantics).
final class StreamOperatorTests: XCTestCase {
    // MARK: map, filter

    func testMapTransformsEachValue() throws {
        XCTAssertEqual(
            try Probe.run("return mf.from { 1, 2, 3 }:map(function(x) return x * 10 end)"),
            ["0:10", "0:20", "0:30", "0:|"])
    }

    func testFilterKeepsTruthyResults() throws {
        XCTAssertEqual(
            try Probe.run("return mf.from { 1, 2, 3, 4, 5 }:filter(function(x) return x % 2 == 1 end)"),
            ["0:1", "0:3", "0:5", "0:|"])
    }

    func testAnErrorInACallbackFailsTheStreamWithItsLocation() throws {
        let h = try Harness([
            "probe/init.lua": Probe.source(
                "return mf.from { 1, 2 }:map(function(x) if x == 2 then error('two!') end return x end)")
        ])
        try h.load()
        try h.send(["type": "go"])
        XCTAssertEqual(h.log.values, ["0:1", "0:error:\(h.path("probe/init.lua")):10: two!"])
        XCTAssertEqual(h.log.errors.first?.location, "\(h.path("probe/init.lua")):10")
    }

    // MARK: flatMap and its strategies
    //
    // Outer: 0 at 100, 1 at 200, 2 at 300. Inner(x): "xa" 50 ms after it starts, "xb" 100 ms after that.

    private let outer = "mf.interval(100):take(3)"
    private let inner = "function(x) return mf.concat(mf.timer(50, x .. 'a'), mf.timer(100, x .. 'b')) end"

    func testFlatMapMergesByDefault() throws {
        let expected = ["150:0a", "250:0b", "250:1a", "350:1b", "350:2a", "450:2b", "450:|"]
        XCTAssertEqual(try Probe.run("return \(outer):flatMap(\(inner))"), expected)
        XCTAssertEqual(try Probe.run("return \(outer):flatMap(\(inner), 'merge')"), expected)
    }

    func testFlatMapLatestCancelsThePreviousInner() throws {
        let expected = ["150:0a", "250:1a", "350:2a", "450:2b", "450:|"]
        XCTAssertEqual(try Probe.run("return \(outer):flatMap(\(inner), 'latest')"), expected)
        XCTAssertEqual(try Probe.run("return \(outer):flatMapLatest(\(inner))"), expected)
    }

    func testFlatMapConcatQueuesInners() throws {
        let expected = ["150:0a", "250:0b", "300:1a", "400:1b", "450:2a", "550:2b", "550:|"]
        XCTAssertEqual(try Probe.run("return \(outer):flatMap(\(inner), 'concat')"), expected)
        XCTAssertEqual(try Probe.run("return \(outer):concatMap(\(inner))"), expected)
    }

    func testFlatMapExhaustDropsValuesWhileAnInnerRuns() throws {
        XCTAssertEqual(
            try Probe.run("return \(outer):flatMap(\(inner), 'exhaust')"),
            ["150:0a", "250:0b", "350:2a", "450:2b", "450:|"])
    }

    func testFlatMapRejectsAnUnknownStrategy() throws {
        try Probe.assertFails(
            "return mf.just(1):flatMap(function(x) return mf.just(x) end, 'switch')",
            "bad argument #3 to 'flatMap' (unknown strategy 'switch'; use merge, latest, concat or exhaust)")
    }

    func testFlatMapFunctionMustReturnAStream() throws {
        // Each names where the function is defined (the probe's stream is on line 10).
        let values = try Probe.run("return mf.just(1):flatMap(function(x) return x end)")
        XCTAssertEqual(values.count, 1)
        XCTAssertTrue(values[0].hasPrefix("0:error:the flatMap function ("), values[0])
        XCTAssertTrue(
            values[0].hasSuffix(
                "probe/init.lua:10) must return a stream (got number); return mf.just(value) for one value, mf.empty() for none"
            ), values[0])
        let none = try Probe.run("return mf.just(1):flatMap(function(x) end)")
        XCTAssertTrue(
            none.first?.hasSuffix(
                "probe/init.lua:10) must return a stream (got nothing); return mf.just(value) for one value, mf.empty() for none"
            ) == true,
            "nil is a mistake, not an empty stream: \(none)")
    }

    // MARK: startWith, catchError, scan

    func testStartWithSendsItsValuesFirst() throws {
        XCTAssertEqual(
            try Probe.run("return mf.timer(100, 'c'):startWith('a', 'b')"), ["0:a", "0:b", "100:c", "100:|"])
        XCTAssertEqual(
            try Probe.run("return mf.timer(100, 'c'):startWith { n = 1 }"), [#"0:{"n":1}"#, "100:c", "100:|"])
    }

    func testCatchErrorReplacesAFailureWithAStream() throws {
        let values = try Probe.run(
            """
            return mf.concat(mf.just(1), mf.timer(100, 2), mf.fail('boom'), mf.just('never'))
              :catchError(function(err) return mf.from { 'caught ' .. err, 'after' } end)
            """)
        XCTAssertEqual(values, ["0:1", "100:2", "100:caught boom", "100:after", "100:|"])
    }

    func testCatchErrorSeesRaisedErrorsWithTheirLocation() throws {
        let h = try Harness([
            "probe/init.lua": Probe.source(
                """
                return mf.just(1):map(function() error('bad value') end)
                    :catchError(function(err) return mf.just('caught: ' .. err) end)
                """)
        ])
        try h.load()
        try h.send(["type": "go"])
        XCTAssertEqual(h.log.values, ["0:caught: \(h.path("probe/init.lua")):10: bad value", "0:|"])
    }

    func testCatchErrorCanFailAgain() throws {
        XCTAssertEqual(
            try Probe.run("return mf.fail('a'):catchError(function(e) return mf.fail(e .. 'b') end)"), ["0:error:ab"])
    }

    func testScanAccumulatesWithoutSendingTheSeed() throws {
        XCTAssertEqual(
            try Probe.run("return mf.from { 1, 2, 3 }:scan(100, function(acc, x) return acc + x end)"),
            ["0:101", "0:103", "0:106", "0:|"])
        XCTAssertEqual(try Probe.run("return mf.empty():scan(0, function(acc, x) return acc + x end)"), ["0:|"])
    }

    // MARK: withLatestFrom

    // Source: 0 at 100, 1 at 200, 2 at 300. Other: x at 150, y at 250.
    private let other = "mf.concat(mf.timer(150, 'x'), mf.timer(100, 'y'))"

    func testWithLatestFromWithoutAFunctionSendsTheOtherValue() throws {
        XCTAssertEqual(
            try Probe.run("return mf.interval(100):take(3):withLatestFrom(\(other))"),
            ["200:x", "300:y", "300:|"], "the value at 100 has no latest yet and is dropped")
    }

    func testWithLatestFromCombinesWithAFunction() throws {
        XCTAssertEqual(
            try Probe.run("return mf.interval(100):take(3):withLatestFrom(\(other), function(a, b) return a .. b end)"),
            ["200:1x", "300:2y", "300:|"])
    }

    // MARK: distinctUntilChanged, take, takeUntil

    func testDistinctUntilChangedDropsConsecutiveEqualValues() throws {
        XCTAssertEqual(
            try Probe.run("return mf.from { 1, 1, 2, 2, 1, 3, 3 }:distinctUntilChanged()"),
            ["0:1", "0:2", "0:1", "0:3", "0:|"])
        XCTAssertEqual(
            try Probe.run("return mf.from { { a = 1 }, { a = 1 }, { a = 2 } }:distinctUntilChanged()"),
            [#"0:{"a":1}"#, #"0:{"a":2}"#, "0:|"], "tables compare by value once they cross")
    }

    func testTakeCompletesAfterNValues() throws {
        XCTAssertEqual(try Probe.run("return mf.interval(100):take(2)"), ["100:0", "200:1", "200:|"])
        XCTAssertEqual(try Probe.run("return mf.interval(100):take(0)"), ["0:|"])
    }

    func testTakeUntilStopsWhenTheOtherSends() throws {
        XCTAssertEqual(try Probe.run("return mf.interval(100):takeUntil(mf.timer(250))"), ["100:0", "200:1", "250:|"])
        XCTAssertEqual(
            try Probe.run("return mf.interval(100):take(2):takeUntil(mf.never())"), ["100:0", "200:1", "200:|"])
    }

    // MARK: delay, debounce, throttle

    func testDelayShiftsValuesAndCompletion() throws {
        XCTAssertEqual(
            try Probe.run("return mf.concat(mf.just(1), mf.timer(50, 2)):delay(100)"), ["100:1", "150:2", "150:|"])
    }

    func testDelayDoesNotDelayFailures() throws {
        XCTAssertEqual(
            try Probe.run("return mf.concat(mf.just(1), mf.timer(50, 2), mf.fail('late')):delay(100)"),
            ["50:error:late"])
    }

    func testDebounceSendsTheValueThatWasFollowedByQuiet() throws {
        let source =
            "mf.merge(mf.just('a'), mf.timer(50, 'b'), mf.timer(100, 'c'), mf.timer(300, 'd'), mf.timer(450, 'e'))"
        XCTAssertEqual(
            try Probe.run("return \(source):debounce(100)"), ["200:c", "400:d", "450:e", "450:|"],
            "completion flushes the pending value at once")
    }

    func testThrottleSendsTheFirstAndTheLatestOfEachWindow() throws {
        let source =
            "mf.merge(mf.just('a'), mf.timer(30, 'b'), mf.timer(60, 'c'), mf.timer(150, 'd'), mf.timer(320, 'e'))"
        XCTAssertEqual(try Probe.run("return \(source):throttle(100)"), ["0:a", "100:c", "200:d", "320:e", "320:|"])
    }

    // MARK: timeout, retry

    func testTimeoutFailsWhenNoValueComesInTime() throws {
        XCTAssertEqual(try Probe.run("return mf.timer(100, 'late'):timeout(50)"), ["50:error:timed out after 50 ms"])
        XCTAssertEqual(try Probe.run("return mf.timer(30, 'a'):timeout(50)"), ["30:a", "30:|"])
    }

    func testTimeoutResetsWithEachValue() throws {
        XCTAssertEqual(try Probe.run("return mf.interval(40):take(3):timeout(50)"), ["40:0", "80:1", "120:2", "120:|"])
        XCTAssertEqual(
            try Probe.run("return mf.concat(mf.timer(40, 'a'), mf.timer(60, 'b')):timeout(50)"),
            ["40:a", "90:error:timed out after 50 ms"])
    }

    func testTimeoutCanSwitchToAnotherStream() throws {
        XCTAssertEqual(
            try Probe.run("return mf.concat(mf.just('a'), mf.timer(100, 'late')):timeout(50, mf.from { 'x', 'y' })"),
            ["0:a", "50:x", "50:y", "50:|"])
    }

    func testCatchErrorSeesTheTimeoutMessage() throws {
        XCTAssertEqual(
            try Probe.run("return mf.never():timeout(500):catchError(function(e) return mf.just('caught: ' .. e) end)"),
            ["500:caught: timed out after 500 ms", "500:|"])
    }

    /// A payment call: each subscription waits 100 ms, then attempts before `ok` decline.
    private func payment(ok: Int) -> String {
        "local n = 0; local pay = mf.timer(100):flatMap(function() n = n + 1; "
            + "if n < \(ok) then return mf.fail('declined ' .. n) end return mf.just('paid ' .. n) end)"
    }

    func testRetrySubscribesAgainAfterAFailure() throws {
        XCTAssertEqual(try Probe.run("\(payment(ok: 2)); return pay:retry(1)"), ["200:paid 2", "200:|"])
        XCTAssertEqual(try Probe.run("\(payment(ok: 1)); return pay:retry(3)"), ["100:paid 1", "100:|"])
    }

    func testRetryPassesTheLastErrorWhenItRunsOut() throws {
        XCTAssertEqual(try Probe.run("\(payment(ok: 3)); return pay:retry(1)"), ["200:error:declined 2"])
        XCTAssertEqual(try Probe.run("\(payment(ok: 2)); return pay:retry(0)"), ["100:error:declined 1"])
    }

    func testRetryKeepsTheValuesAlreadySent() throws {
        XCTAssertEqual(
            try Probe.run("return mf.concat(mf.timer(10, 'v'), mf.fail('x')):retry(2)"),
            ["10:v", "20:v", "30:v", "30:error:x"])
    }

    func testRetryWaitsAConstantBackoff() throws {
        XCTAssertEqual(
            try Probe.run("\(payment(ok: 3)); return pay:retry(2, { backoff = 50 })"), ["400:paid 3", "400:|"])
    }

    func testRetryWaitsTheBackoffTheFunctionGives() throws {
        // Fails at 100, waits 50 (retry 1); fails at 250, waits 100 (retry 2); paid at 450.
        XCTAssertEqual(
            try Probe.run("\(payment(ok: 3)); return pay:retry(2, { backoff = function(r) return r * 50 end })"),
            ["450:paid 3", "450:|"])
    }

    func testTimeoutWithOneRetryAsAPaymentCall() throws {
        // The first call hangs; the timeout fails it at 300, the retry answers at 100 after.
        let body =
            "local n = 0; return mf.timer(0):flatMap(function() n = n + 1; "
            + "if n == 1 then return mf.never() end return mf.timer(100, 'paid ' .. n) end):timeout(300):retry(1)"
        XCTAssertEqual(try Probe.run(body), ["400:paid 2", "400:|"])
    }

    func testABackoffFunctionMustReturnANonNegativeInteger() throws {
        for (result, got) in [("-1", "-1"), ("1.5", "1.5"), ("'soon'", "string"), ("nil", "nil")] {
            let values = try Probe.run("return mf.fail('x'):retry(1, { backoff = function() return \(result) end })")
            XCTAssertEqual(values.count, 1, "\(values)")
            XCTAssertTrue(values.first?.hasPrefix("0:error:the retry backoff function (") == true, "\(values)")
            XCTAssertTrue(
                values.first?.hasSuffix("probe/init.lua:10) must return a non-negative integer (ms), got \(got)")
                    == true, "\(values)")
        }
    }

    func testTimeoutAndRetryArgumentErrors() throws {
        try Probe.assertFails(
            "return mf.just(1):timeout()", "bad argument #2 to 'timeout' (integer expected, got no value)")
        try Probe.assertFails(
            "return mf.just(1):timeout('1s')", "bad argument #2 to 'timeout' (integer expected, got string)")
        try Probe.assertFails(
            "return mf.just(1):timeout(-5)", "bad argument #2 to 'timeout' (ms must not be negative, got -5)")
        try Probe.assertFails(
            "return mf.just(1):timeout(10, 'other')", "bad argument #3 to 'timeout' (stream expected, got string)")
        try Probe.assertFails(
            "return mf.just(1):retry()", "bad argument #2 to 'retry' (integer expected, got no value)")
        try Probe.assertFails(
            "return mf.just(1):retry(1.5)", "bad argument #2 to 'retry' (integer expected, got number)")
        try Probe.assertFails(
            "return mf.just(1):retry(-1)", "bad argument #2 to 'retry' (count of retries must not be negative, got -1)")
        try Probe.assertFails(
            "return mf.just(1):retry(1, 100)", "bad argument #3 to 'retry' (table expected, got number)")
        try Probe.assertFails(
            "return mf.just(1):retry(1, { backoff = '1s' })",
            "bad argument #3 to 'retry' (field 'backoff' must be a non-negative integer or a function, got string)")
        try Probe.assertFails(
            "return mf.just(1):retry(1, { backoff = -10 })",
            "bad argument #3 to 'retry' (field 'backoff' must be a non-negative integer or a function, got -10)")
        try Probe.assertFails(
            "return mf.just(1):retry(1, { backof = 10 })",
            "bad argument #3 to 'retry' (unknown option 'backof'; the only one is backoff)")
    }

    func testAnArgumentErrorNamesTheScriptLine() throws {
        let h = try Harness(["probe/init.lua": Probe.source("return mf.just(1):retry(-1)")])
        try h.load()
        try h.send(["type": "go"])
        XCTAssertEqual(
            h.log.values,
            [
                "0:error:\(h.path("probe/init.lua")):10: bad argument #2 to 'retry' (count of retries must not be negative, got -1)"
            ])
    }

    // MARK: subscribe

    func testSubscribeRunsCallbacksAndItsResultDisposes() throws {
        let source = """
            local mf = require "moonflow"
            local seen, stop = {}, nil
            local function add(x) seen[#seen + 1] = tostring(x) end
            return mf.feature {
              name = "sub",
              initial = {},
              actions = { start = {}, stop = {}, report = {} },
              mutations = { seen = { list = "string" } },
              handle = function(action)
                if action.type == "start" then
                  stop = mf.interval(100):subscribe(add, nil, function() add("never completes") end)
                  mf.from { "j" }:subscribe(add, nil, function() add("done") end)
                  mf.fail("oops"):subscribe(nil, function(e) add("err " .. e) end)
                elseif action.type == "stop" then
                  stop()
                else
                  return { type = "seen", list = table.concat(seen, ",") }
                end
              end,
              reduce = function(state, m) state.seen = m.list; return state end,
            }
            """
        let h = try Harness(["sub/init.lua": source])
        try h.load("sub")
        try h.send(["type": "start"])
        try h.send(["type": "stop"], at: 250)
        try h.send(["type": "report"], at: 1000)
        XCTAssertEqual(h.state, ["seen": "j,done,err oops,0,1"])
    }
}
