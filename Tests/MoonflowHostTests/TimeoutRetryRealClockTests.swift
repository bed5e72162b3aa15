import Foundation
import LuaKit
import MoonflowHost
import MoonflowHostTools
import MoonflowLua
import Streams
import XCTest

/// `timeout` and `retry` on the real clock: a host whose Lua runs on its queue and whose
/// timers are real. Only the order and the outcome are asserted, never how fast they came.
final class TimeoutRetryRealClockTests: XCTestCase {
    /// `pay`: the first call hangs, the timeout fails it, one retry after a backoff answers.
    /// `hang`: every call hangs; after the retry the timeout's failure passes through.
    static let payment = """
        local mf = require "moonflow"
        return mf.feature {
          name = "payment", initial = { log = "" },
          actions = { pay = {}, hang = {} },
          mutations = { note = { text = "string" } },
          handle = function(a)
            local calls = 0
            local call = mf.timer(0):flatMap(function()
              calls = calls + 1
              if a.type == "hang" or calls == 1 then return mf.never() end
              return mf.just("paid on call " .. calls)
            end)
            return call:timeout(100):retry(1, { backoff = function(r) return r * 20 end })
              :catchError(function(e) return mf.just("failed after " .. calls .. " calls: " .. e) end)
              :map(function(text) return { type = "note", text = text } end)
          end,
          reduce = function(s, m) s.log = s.log .. m.text .. ";" ; return s end,
        }
        """

    func testATimeoutThenARetryOnARealClockQueueHost() throws {
        let host = try FeatureHost(configuration: .init(searchPaths: [], executor: .queue))
        XCTAssertNil(host.testScheduler)
        let feature = try host.load(name: "payment", source: Self.payment)
        feature.start()
        func log() -> String { feature.state["log"]?.stringValue ?? "" }
        func wait(until done: () -> Bool) {
            let give = Date().addingTimeInterval(20)
            while !done(), Date() < give { Thread.sleep(forTimeInterval: 0.01) }
        }

        try feature.send(["type": "pay"])
        wait { log().contains("paid") }
        XCTAssertEqual(log(), "paid on call 2;")

        try feature.send(["type": "hang"])
        wait { log().contains("failed") }
        XCTAssertEqual(log(), "paid on call 2;failed after 2 calls: timed out after 100 ms;")
    }
}
