import Foundation
import LuaKit
import MoonflowHost
import MoonflowHostTools
import MoonflowLua
import Streams
import XCTest

/// A Lua loop stops at its time limit on every executor a host can have: a queue (the
/// real clock, libdispatch's worker threads, which start with every signal blocked), the
/// main actor, the virtual clock driven by the caller, and an app's own thread that
/// blocks every signal. Before the fix, the watchdog's signal never reached a queue's
/// worker: the loop ran until the host was declared stuck (limit + 2 s) and then on, at
/// full speed, for as long as the process lived.
final class RunawayScriptTests: XCTestCase {
    /// Loops in `handle`, in `reduce` and in a stream's function; `bump` shows the host works after.
    static let runaway = """
        local mf = require "moonflow"
        return mf.feature {
          name = "runaway", initial = { n = 0 },
          actions = { inHandle = {}, inReduce = {}, inStream = {}, bump = {} },
          mutations = { spin = {}, bump = {} },
          handle = function(a)
            if a.type == "inHandle" then while true do end end
            if a.type == "inReduce" then return { type = "spin" } end
            if a.type == "inStream" then
              return mf.just(1):map(function() local x = 0 while true do x = x + 1 end end)
            end
            return { type = "bump" }
          end,
          reduce = function(s, m)
            if m.type == "spin" then local t = {} while true do t[1] = 1 end end
            s.n = s.n + 1
            return s
          end,
        }
        """

    static let limitMs: Int64 = 150

    /// Sends each runaway action, then `bump`, and returns the errors in order and the count
    /// `bump` reached. `drive` runs the work on the executor under test until `done` holds.
    private static func runAll(
        _ host: FeatureHost, drive: (_ done: () -> Bool) -> Void
    ) throws -> (errors: [String], n: LuaValue?) {
        let feature = try host.load(name: "runaway", source: Self.runaway)
        let errors = Locked([String]())
        let token = feature.failures.observe(value: { e in errors.withLock { $0.append(e.message) } })
        defer { token?.dispose() }
        feature.start()
        for (i, action) in ["inHandle", "inReduce", "inStream"].enumerated() {
            try feature.send(["type": .string(LuaString(action))])
            drive { errors.withLock { $0.count } > i || host.isStuck }
        }
        try feature.send(["type": "bump"])
        drive { feature.state["n"] == .integer(1) || host.isStuck }
        XCTAssertFalse(host.isStuck, "no call was left stuck: every loop stopped at its limit")
        return (errors.withLock { $0 }, feature.state["n"])
    }

    private func assertStoppedAtTheLimit(
        _ result: (errors: [String], n: LuaValue?), _ executor: String,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        XCTAssertEqual(result.errors.count, 3, "\(executor): \(result.errors)", file: file, line: line)
        for message in result.errors {
            XCTAssertTrue(
                message.contains("time limit of \(Self.limitMs) ms exceeded"), "\(executor): \(message)", file: file,
                line: line)
            XCTAssertFalse(message.contains("cannot be interrupted"), "\(executor): \(message)", file: file, line: line)
        }
        XCTAssertEqual(result.n, .integer(1), "\(executor): the host goes on after each loop", file: file, line: line)
    }

    /// Waits on this thread (the work runs elsewhere), up to a bound no healthy run nears.
    private static func wait(_ done: () -> Bool) {
        let give = Date().addingTimeInterval(20)
        while !done(), Date() < give { Thread.sleep(forTimeInterval: 0.005) }
    }

    func testAQueueHostStopsALoopOnItsWorkerThread() throws {
        let host = try FeatureHost(configuration: .init(searchPaths: [], timeLimitMs: Self.limitMs, executor: .queue))
        assertStoppedAtTheLimit(try Self.runAll(host, drive: Self.wait), "queue")
    }

    func testAMainActorHostStopsALoopOnTheMainThread() throws {
        XCTAssertTrue(Thread.isMainThread)
        let host = try FeatureHost(
            configuration: .init(searchPaths: [], timeLimitMs: Self.limitMs, executor: .mainActor))
        let result = try Self.runAll(host) { done in
            let give = Date().addingTimeInterval(20)
            while !done(), Date() < give { RunLoop.main.run(until: Date().addingTimeInterval(0.005)) }
        }
        assertStoppedAtTheLimit(result, "main actor")
    }

    func testAVirtualClockHostStopsALoopOnTheThreadThatDrivesIt() throws {
        let host = try FeatureHost(configuration: .init(searchPaths: [], timeLimitMs: Self.limitMs, clock: .virtual))
        let result = try Self.runAll(host) { done in
            let give = Date().addingTimeInterval(20)
            while !done(), Date() < give { host.advance(by: 1) }
        }
        assertStoppedAtTheLimit(result, "virtual clock")
    }

    /// An app's own thread that blocks every signal, driving a virtual-clock host: the
    /// watchdog's signal cannot arrive there until the thread arms a call and opens it.
    func testAnAppThreadThatBlocksEverySignalStopsALoop() throws {
        let outcome = Locked<Result<(errors: [String], n: LuaValue?), any Error>?>(nil)
        let thread = Thread {
            var all = sigset_t()
            sigfillset(&all)
            pthread_sigmask(SIG_SETMASK, &all, nil)
            outcome.withLock {
                $0 = Result {
                    let host = try FeatureHost(
                        configuration: .init(searchPaths: [], timeLimitMs: Self.limitMs, clock: .virtual))
                    return try RunawayScriptTests.runAll(host) { done in
                        let give = Date().addingTimeInterval(20)
                        while !done(), Date() < give { host.advance(by: 1) }
                    }
                }
            }
        }
        thread.stackSize = 16 << 20
        thread.start()
        Self.wait { outcome.withLock { $0 != nil } }
        assertStoppedAtTheLimit(try XCTUnwrap(outcome.withLock { $0 }).get(), "an app's thread")
    }
}
