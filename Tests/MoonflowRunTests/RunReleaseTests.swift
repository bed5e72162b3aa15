import Foundation
import LuaKit
import MoonflowEvents
import MoonflowHost
import MoonflowLua
import MoonflowRun
import XCTest

/// A finished `moonflow run` is freed with its host and Lua state, whoever still holds
/// the dispatcher it handed out.
final class RunReleaseTests: XCTestCase {
    private var dir = ""

    override func setUpWithError() throws {
        dir = (NSTemporaryDirectory() as NSString).appendingPathComponent("mfrunrelease\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    /// An observer of a `FeatureRun` that keeps the dispatcher it is given (as the inspector does).
    private final class KeepsDispatcher: RunObserver, @unchecked Sendable {
        var dispatcher: (any RunDispatcher)?
        func started(_ run: RunDescription, dispatch: any RunDispatcher) { dispatcher = dispatch }
        func observe(_ event: FeatureEvent, t: Int, cause: LuaValue?) {}
        func input(_ action: LuaValue, t: Int) {}
    }

    func testAFinishedRunIsFreedThoughItsObserverKeepsItsDispatcher() throws {
        let folder = (dir as NSString).appendingPathComponent("ran")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try """
        local mf = require "moonflow"
        return mf.feature {
          name = "ran", initial = { n = 0 }, actions = { go = {} }, mutations = { seen = {} },
          handle = function() return mf.just(1):map(function() return { type = "seen" } end) end,
          reduce = function(state) state.n = state.n + 1; return state end,
        }
        """.write(toFile: (folder as NSString).appendingPathComponent("init.lua"), atomically: true, encoding: .utf8)
        let observer = KeepsDispatcher()
        weak var run: FeatureRun?
        do {
            var options = FeatureRun.Options(path: (dir as NSString).appendingPathComponent("ran"))
            options.clock = .virtual
            options.observers = [observer]
            var lines = ["{\"type\":\"go\"}"].makeIterator()
            let made = FeatureRun(
                options: options, input: InputSource(interactive: false) { lines.next() }, write: { _ in })
            XCTAssertEqual(made.run(), 0)
            run = made
        }
        XCTAssertNil(run)
        XCTAssertNotNil(observer.dispatcher)
    }

}
