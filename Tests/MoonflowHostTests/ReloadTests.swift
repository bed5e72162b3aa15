import Foundation
import LuaKit
import MoonflowHost
import MoonflowHostTools
import PluginFixtures
import MoonflowLua
import Streams
import XCTest

/// Live reload through `FeatureHost.reload`: validate, then swap, keeping the state;
/// the four pitfalls (old closures, module caches, old effects, changed state shape).
final class ReloadTests: XCTestCase {
    private var dir = ""
    private var host: FeatureHost!
    private let recorded = Recorded()

    override func setUpWithError() throws {
        dir = (NSTemporaryDirectory() as NSString).appendingPathComponent("mfreload\(UUID().uuidString.prefix(8))")
        host = try FeatureHost(configuration: .init(searchPaths: [dir], clock: .virtual))
    }

    override func tearDown() {
        // XCTest keeps every test case to the end of the process: let the host (and the
        // declarations its features hold) go with the test.
        host = nil
        try? FileManager.default.removeItem(atPath: dir)
    }

    private func write(_ path: String, _ text: String) throws {
        let full = (dir as NSString).appendingPathComponent(path)
        try FileManager.default.createDirectory(
            atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try text.write(toFile: full, atomically: true, encoding: .utf8)
    }

    /// A counter whose reducer adds `step` times n, with `extra` Lua inside the definition.
    private func counter(
        step: Int = 1, version: Int = 1, header: String = "", extra: String = "", reduceBody: String? = nil,
        initial: String = "{ count = 0 }"
    ) -> String {
        """
        local mf = require "moonflow"
        \(header)
        return mf.feature {
          name = "counter",
          version = \(version),
          initial = \(initial),
          actions = { add = { n = "integer?" }, later = { ms = "integer" }, work = {} },
          mutations = { added = { n = "integer" }, note = { text = "string" } },
          handle = function(action, state, env)
            if action.type == "later" then return mf.timer(action.ms, { type = "added", n = 100 }) end
            if action.type == "work" then
              return mf.task(function(t)
                local ok = t:await(mf.timer(50, 1))
                t:emit({ type = "added", n = 1000 })
              end)
            end
            return { type = "added", n = action.n or 1 }
          end,
          reduce = function(state, m)
            \(reduceBody ?? "if m.type == \"added\" then state.count = state.count + m.n * \(step) end")
            return state
          end,
          \(extra)
        }
        """
    }

    private func load(_ name: String = "counter") throws -> RunningFeature {
        let feature = try host.load(name)
        let recorded = self.recorded
        feature.outlet.add { event in recorded.append(event) }
        feature.start()
        return feature
    }

    private var reloads: [FeatureEvent] { recorded.all.filter { if case .reload = $0 { true } else { false } } }

    func testSameVersionKeepsTheStateAndRunsTheNewCode() throws {
        try write("counter/init.lua", counter(step: 1))
        let feature = try load()
        try feature.send(["type": "add", "n": 5])
        host.settle()
        try write("counter/init.lua", counter(step: 10))
        let report = try host.reload(feature)
        XCTAssertEqual(report.files, ["init.lua"])
        XCTAssertEqual(report.migrations, [])
        XCTAssertEqual(feature.state, ["count": 5], "the state is kept")
        try feature.send(["type": "add", "n": 1])
        host.settle()
        XCTAssertEqual(feature.state, ["count": 15], "the new reducer runs")
        XCTAssertEqual(reloads.count, 1)
    }

    func testAStateThatNoLongerFitsTheNewDeclarationKeepsTheOldCodeAndSaysTheFix() throws {
        try write(
            "counter/init.lua",
            counter(extra: #"state = { count = "integer", label = "string" },"#, initial: #"{ count = 0, label = "" }"#)
        )
        let feature = try load()
        try feature.send(["type": "add", "n": 5])
        host.settle()
        // The new declaration drops `label`, which the kept state still has.
        try write("counter/init.lua", counter(step: 10, extra: #"state = { count = "integer" },"#))
        XCTAssertThrowsError(try host.reload(feature)) { error in
            let text = "\(error)"
            XCTAssertTrue(text.contains("state has no field 'label'"), text)
            XCTAssertTrue(text.contains("raise `version` and add a migrate"), text)
        }
        try feature.send(["type": "add", "n": 1])
        host.settle()
        XCTAssertEqual(feature.state, ["count": 6, "label": ""], "the old code keeps running")
        // A migrate that drops it makes the new code fit, and it goes live.
        try write(
            "counter/init.lua",
            counter(
                step: 10, version: 2,
                extra: """
                    state = { count = "integer" },
                    migrate = function(old) return { count = old.count } end,
                    """))
        try host.reload(feature)
        try feature.send(["type": "add", "n": 1])
        host.settle()
        XCTAssertEqual(feature.state, ["count": 16])
    }

    /// `Tests/Fixtures/plugins/gc-loop` with `padding` string constants for the parser.
    private func looping(padding: Int) throws -> String {
        try Fixtures.fixture("plugins/gc-loop/init.lua")
            .replacingOccurrences(
                of: "--[[padding]]", with: (0..<padding).map { "\"pad\($0)\"" }.joined(separator: ", "))
    }

    func testAFinalizerThatLoopsIsStoppedDuringAReloadAndTheFeatureGoesOn() throws {
        try write("gc/init.lua", try looping(padding: 0))
        let feature = try load("gc")
        try feature.send(["type": "drop"])
        host.settle()
        // The new source's parse allocates enough for the collector to reach the dropped
        // object's finalizer: it must not run there, where no call has a deadline.
        try write("gc/init.lua", try looping(padding: 40_000))
        let host = self.host!
        let outcome = Locked<String?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            do { try host.reload(feature); outcome.withLock { $0 = "reloaded" } } catch {
                outcome.withLock { $0 = "\(error)" }
            }
            done.signal()
        }
        XCTAssertEqual(done.wait(timeout: .now() + 30), .success, "the reload hangs in the finalizer")
        guard let result = outcome.withLock({ $0 }) else { return }
        try feature.send(["type": "bump"])
        host.settle()
        try feature.send(["type": "bump"])
        host.settle()
        let errors = recorded.all.compactMap { if case .error(let m, _) = $0 { m } else { nil } }
        XCTAssertTrue(
            result.contains("time limit of 1000 ms exceeded")
                || errors.contains { $0.contains("time limit of 1000 ms exceeded") },
            "the finalizer was stopped under the limit: \(result) \(errors)")
        XCTAssertTrue([["n": 1], ["n": 2]].contains(feature.state), "the feature goes on: \(feature.state)")
    }

    func testASyntaxErrorKeepsTheOldCodeThenTheFixGoesLive() throws {
        try write("counter/init.lua", counter(step: 1))
        let feature = try load()
        let reported = Locked<[FeatureError]>([])
        let token = feature.observe(kinds: .error) { [weak feature] _ in
            if let error = feature?.eventError { reported.withLock { $0.append(error) } }
        }
        defer { token.cancel() }
        try write("counter/init.lua", counter(step: 2) + "\n)")
        XCTAssertThrowsError(try host.reload(feature)) { error in
            guard let failure = error as? FeatureError,
                case LuaError.syntax(let file, let line, _)? = failure.underlying as? LuaError
            else {
                return XCTFail("\(error)")
            }
            XCTAssertEqual(failure.stage, .reload)
            XCTAssertTrue(file.hasSuffix("counter/init.lua"), file)
            XCTAssertGreaterThan(line ?? 0, 20)
        }
        XCTAssertEqual(reported.withLock { $0.map(\.stage) }, [.reload], "the failure is on the feature's errors too")
        try feature.send(["type": "add", "n": 3])
        host.settle()
        XCTAssertEqual(feature.state, ["count": 3], "the old code still runs")
        try write("counter/init.lua", counter(step: 2))
        try host.reload(feature)
        try feature.send(["type": "add", "n": 3])
        host.settle()
        XCTAssertEqual(feature.state, ["count": 9])
    }

    /// A view model's `lastError` shows a failed reload until a reload succeeds (the next save
    /// through `moonflow serve`, which reloads as `reload` does); an error of another stage
    /// stays through a reload.
    func testAReloadThatSucceedsClearsTheFailedReloadsErrorInAViewModel() throws {
        try write("counter/init.lua", counter(step: 1))
        let feature = try load()
        let host = self.host!
        let file = (dir as NSString).appendingPathComponent("counter/init.lua")
        let (broken, fixed) = (counter(step: 2) + "\n)", counter(step: 2))
        // On the virtual clock the events come on this thread, the main one: the model takes
        // each as it is delivered.
        try MainActor.assumeIsolated {
            let model = try FeatureViewModel(feature, as: LuaValue.self, actions: LuaValue.self)
            try broken.write(toFile: file, atomically: true, encoding: .utf8)
            XCTAssertThrowsError(try host.reload(feature))
            XCTAssertEqual(model.lastError?.stage, .reload)
            try fixed.write(toFile: file, atomically: true, encoding: .utf8)
            try host.reload(feature)
            XCTAssertNil(model.lastError, "the save that fixed it cleared it")

            model.send(["type": "undeclared"])
            XCTAssertEqual(model.lastError?.stage, .send)
            try host.reload(feature)
            XCTAssertEqual(model.lastError?.stage, .send, "a refused action is not a reload's to clear")
        }
    }

    func testAnErrorRaisedByTheNewTopLevelKeepsTheOldCode() throws {
        try write("counter/init.lua", counter(step: 1))
        let feature = try load()
        try write("counter/init.lua", counter(step: 2, header: "error('not ready yet')"))
        XCTAssertThrowsError(try host.reload(feature)) { error in
            XCTAssertTrue("\(error)".contains("counter/init.lua:2: not ready yet"), "\(error)")
        }
        try write(
            "counter/init.lua", counter(step: 2).replacingOccurrences(of: "name = \"counter\",", with: "name = 7,"))
        XCTAssertThrowsError(try host.reload(feature)) { error in
            XCTAssertTrue("\(error)".contains("field 'name' must be a non-empty string"), "\(error)")
        }
        try feature.send(["type": "add"])
        host.settle()
        XCTAssertEqual(feature.state, ["count": 1])
        XCTAssertEqual(reloads.count, 0)
    }

    func testAChangedModuleIsLoadedAgainAndOldClosuresAreGone() throws {
        try write("counter/words.lua", "local M = { said = {} }\nfunction M.word() return 'old' end\nreturn M\n")
        let reduce = """
            local words = require "counter.words"
            words.said[#words.said + 1] = function() return "old closure" end
            if m.type == "added" then state.count = state.count + m.n end
            state.word = words.word() .. #words.said
            """
        try write("counter/init.lua", counter(reduceBody: reduce))
        let feature = try load()
        try feature.send(["type": "add"])
        try feature.send(["type": "add"])
        host.settle()
        XCTAssertEqual(feature.state["word"], "old2")
        try write("counter/words.lua", "local M = { said = {} }\nfunction M.word() return 'new' end\nreturn M\n")
        try host.reload(feature, changed: ["words.lua"])
        try feature.send(["type": "add"])
        host.settle()
        XCTAssertEqual(feature.state["word"], "new1", "a fresh module: the old closures stored in its table are gone")
    }

    func testWorkInFlightIsKeptAndItsMutationsMeetTheNewReducer() throws {
        try write("counter/init.lua", counter(step: 1))
        let feature = try load()
        try feature.send(["type": "later", "ms": 100])
        try feature.send(["type": "work"])
        host.settle()
        XCTAssertEqual(feature.inFlight.count, 2)
        try write("counter/init.lua", counter(step: 2))
        let report = try host.reload(feature)
        XCTAssertEqual(report.changes.kept, ["later #1", "work #2"])
        XCTAssertEqual(report.changes.cancelled, [])
        XCTAssertEqual(feature.inFlight.count, 2, "the timer and the task go on")
        host.advance(by: 500)
        XCTAssertEqual(feature.state, ["count": 2200], "both finished, reduced by the new code (step 2)")
        guard case .reload(_, _, let changes)? = reloads.last else { return XCTFail("no reload event") }
        XCTAssertEqual(changes.kept, ["later #1", "work #2"])
    }

    func testWorkOfAnActionTheNewCodeNoLongerDeclaresIsCancelled() throws {
        try write("counter/init.lua", counter(step: 1))
        let feature = try load()
        try feature.send(["type": "later", "ms": 100])
        try feature.send(["type": "work"])
        host.settle()
        try write(
            "counter/init.lua", counter(step: 1).replacingOccurrences(of: "later = { ms = \"integer\" }, ", with: ""))
        let report = try host.reload(feature)
        XCTAssertEqual(report.changes.kept, ["work #2"])
        XCTAssertEqual(report.changes.cancelled, ["later #1"])
        host.advance(by: 500)
        XCTAssertEqual(feature.state, ["count": 1000], "only the task's mutation came")
    }

    func testALatestActionAfterAReloadCancelsTheKeptFlightOfItsType() throws {
        try write("counter/init.lua", counter(step: 1, extra: "strategy = { later = \"latest\" },"))
        let feature = try load()
        try feature.send(["type": "later", "ms": 100])
        host.settle()
        try write("counter/init.lua", counter(step: 2, extra: "strategy = { later = \"latest\" },"))
        let report = try host.reload(feature)
        XCTAssertEqual(report.changes.kept, ["later #1"])
        try feature.send(["type": "later", "ms": 100])
        host.advance(by: 500)
        XCTAssertEqual(feature.state, ["count": 200], "the kept timer was replaced by the newer one, as latest says")
    }

    func testAKeptFlightsMutationIsCheckedAgainstTheNewSchema() throws {
        try write("counter/init.lua", counter(step: 1))
        let feature = try load()
        try feature.send(["type": "later", "ms": 100])
        host.settle()
        try write(
            "counter/init.lua",
            counter(step: 1, reduceBody: "if m.type == \"note\" then state.count = -1 end")
                .replacingOccurrences(of: "mutations = { added = { n = \"integer\" }, ", with: "mutations = { "))
        try host.reload(feature)
        host.advance(by: 500)
        let errors = recorded.all.compactMap { if case .error(let message, _) = $0 { message } else { nil } }
        XCTAssertTrue(errors.contains { $0.contains("added") }, "the undeclared mutation is named: \(errors)")
        XCTAssertEqual(feature.state, ["count": 0], "the state stays as it was")
        try feature.send(["type": "add"])
        host.settle()
        XCTAssertFalse(feature.isDisposed, "the feature keeps running")
    }

    /// A declared optional field that `initial` leaves out (an error set by a reducer) is
    /// the new code's own, not left over: before, each reload called it stale.
    func testADeclaredOptionalFieldMissingFromInitialIsNotStale() throws {
        let declared = counter(step: 1, reduceBody: "state.count = state.count + m.n; state.note = \"set\"")
            .replacingOccurrences(
                of: "initial = { count = 0 }",
                with:
                    "initial = { count = 0 }, state = { count = \"integer\", note = \"string?\", filters = { \"record?\", q = \"string?\" } }"
            )
        try write("counter/init.lua", declared)
        let feature = try load()
        try feature.send(["type": "add", "n": 5])
        host.settle()
        XCTAssertEqual(feature.state["note"], "set")
        try write("counter/init.lua", declared + "\n-- saved again\n")
        let report = try host.reload(feature)
        XCTAssertEqual(report.changes.stale, [], "note is declared: \(report.changes)")
        XCTAssertEqual(feature.state["note"], "set", "and kept")
    }

    func testKeysTheNewInitialAddsAreFilledInAndLeftOversNamed() throws {
        try write(
            "counter/init.lua",
            counter(step: 1).replacingOccurrences(
                of: "initial = { count = 0 }", with: "initial = { count = 0, old = 1, filters = { q = \"\" } }"))
        let feature = try load()
        try feature.send(["type": "add", "n": 5])
        host.settle()
        try write(
            "counter/init.lua",
            counter(step: 1, reduceBody: "state.count = state.count + m.n; state.unread = state.unread + 1")
                .replacingOccurrences(
                    of: "initial = { count = 0 }",
                    with: "initial = { count = 0, unread = 0, filters = { q = \"\", sort = \"name\" } }"))
        let report = try host.reload(feature)
        XCTAssertEqual(report.changes.added, ["filters.sort", "unread"])
        XCTAssertEqual(report.changes.stale, ["old"])
        XCTAssertEqual(feature.state, ["count": 5, "old": 1, "unread": 0, "filters": ["q": "", "sort": "name"]])
        try feature.send(["type": "add", "n": 1])
        host.settle()
        XCTAssertEqual(feature.state["unread"], 1, "the new reducer finds the key it uses")
        XCTAssertEqual(recorded.all.filter { if case .error = $0 { true } else { false } }, [])
    }

    func testRestartStartsFromTheNewInitialAndCancelsEverything() throws {
        try write("counter/init.lua", counter(step: 1))
        let feature = try load()
        try feature.send(["type": "add", "n": 5])
        try feature.send(["type": "later", "ms": 100])
        host.settle()
        try write(
            "counter/init.lua",
            counter(step: 1).replacingOccurrences(of: "initial = { count = 0 }", with: "initial = { count = 7 }"))
        let report = try host.restart(feature)
        XCTAssertEqual(report.changes.cancelled, ["later #2"])
        XCTAssertEqual(feature.state, ["count": 7])
        host.advance(by: 500)
        XCTAssertEqual(feature.state, ["count": 7], "the old timer was cancelled")
    }

    func testAChangedVersionMigratesACopyAndAStateEventFollows() throws {
        try write("counter/init.lua", counter(step: 1))
        let feature = try load()
        try feature.send(["type": "add", "n": 4])
        host.settle()
        let migrate = "migrate = function(old, from) return { count = old.count * 2, from = from } end,"
        try write("counter/init.lua", counter(step: 1, version: 2, extra: migrate))
        let report = try host.reload(feature)
        XCTAssertEqual(report.migrations, [.init(feature: "counter", fromVersion: 1, toVersion: 2)])
        XCTAssertEqual(feature.state, ["count": 8, "from": 1])
        let states = recorded.all.compactMap { if case .state(let s, _) = $0 { s } else { nil } }
        XCTAssertEqual(states.last, ["count": 8, "from": 1])
        try feature.send(["type": "add"])
        host.settle()
        XCTAssertEqual(feature.state["count"], 9)
    }

    func testAFailingOrInvalidMigrateKeepsTheOldCodeAndState() throws {
        try write("counter/init.lua", counter(step: 1))
        let feature = try load()
        try feature.send(["type": "add", "n": 4])
        host.settle()
        try write(
            "counter/init.lua",
            counter(step: 5, version: 2, extra: "migrate = function(old) error('cannot migrate') end,"))
        XCTAssertThrowsError(try host.reload(feature)) {
            XCTAssertTrue("\($0)".contains("counter/init.lua:23: cannot migrate"), "\($0)")
        }
        try write(
            "counter/init.lua",
            counter(step: 5, version: 2, extra: "migrate = function(old) return { count = old.count, f = print } end,"))
        XCTAssertThrowsError(try host.reload(feature)) { XCTAssertTrue("\($0)".contains("not plain data"), "\($0)") }
        try write("counter/init.lua", counter(step: 5, version: 2))
        XCTAssertThrowsError(try host.reload(feature)) {
            XCTAssertTrue("\($0)".contains("has no migrate(old, fromVersion)"), "\($0)")
        }
        try feature.send(["type": "add"])
        host.settle()
        XCTAssertEqual(feature.state, ["count": 5], "old reducer, old state")
    }

    func testACompositesChildIsReloadedWithItsState() throws {
        try write(
            "pair/init.lua",
            """
            local mf = require "moonflow"
            return mf.compose {
              name = "pair",
              children = { left = "counter", right = require "pair.right" },
              route = function(action) return action.side, { type = "add", n = action.n } end,
              combine = function(states) return { total = states.left.count + states.right.count } end,
            }
            """)
        try write(
            "pair/right.lua",
            counter(step: 1).replacingOccurrences(
                of: "local mf = require \"moonflow\"\n", with: "local mf = require \"moonflow\"\n"
            ).replacingOccurrences(of: "return mf.feature", with: "return mf.feature"))
        try write("counter/init.lua", counter(step: 1))
        let root = try host.load("pair")
        root.start()
        try root.send(["type": "x", "side": "left", "n": 2])
        try root.send(["type": "x", "side": "right", "n": 3])
        host.settle()
        XCTAssertEqual(root.state, ["total": 5])
        try write("counter/init.lua", counter(step: 10))
        try write("pair/right.lua", counter(step: 100))
        try host.reload(root)
        XCTAssertEqual(root.state, ["total": 5], "children's states are kept")
        try root.send(["type": "x", "side": "left", "n": 1])
        try root.send(["type": "x", "side": "right", "n": 1])
        host.settle()
        XCTAssertEqual(root.state, ["total": 115])
    }

    func testAChildTheNewCompositeDropsHasItsWorkCancelledAndListed() throws {
        let pair = { (children: String, total: String) in
            """
            local mf = require "moonflow"
            return mf.compose {
              name = "pair",
              children = { \(children) },
              route = function(action) return action.side, { type = "later", ms = 100 } end,
              combine = function(states) return { total = \(total) } end,
            }
            """
        }
        try write(
            "pair/init.lua",
            pair("left = \"counter\", right = require \"pair.right\"", "states.left.count + states.right.count"))
        try write("pair/right.lua", counter(step: 1))
        try write("counter/init.lua", counter(step: 1))
        let root = try host.load("pair")
        root.start()
        try root.send(["type": "x", "side": "right"])
        host.settle()
        XCTAssertFalse(root.isIdle)
        let right = try XCTUnwrap((root as? LuaComposite)?.children.first { $0.name == "right" }?.feature)
        try write("pair/init.lua", pair("left = \"counter\"", "states.left.count"))
        let report = try host.reload(root)
        XCTAssertEqual(report.changes.cancelled, ["right.later #1"])
        XCTAssertTrue(right.inFlight.isEmpty, "the dropped child's timer no longer runs")
        XCTAssertTrue(root.isIdle)
    }

    func testAThousandReloadsDoNotGrowTheHeap() throws {
        try write("counter/words.lua", "return { word = 'w' }\n")
        try write("counter/init.lua", counter(header: "local words = require 'counter.words'"))
        let feature = try load()
        try host.reload(feature)
        host.lua.collectGarbage()
        let first = host.lua.memoryInUse
        for _ in 0..<1000 { try host.reload(feature) }
        host.lua.collectGarbage()
        let after = host.lua.memoryInUse
        XCTAssertLessThan(
            Double(after), Double(first) * 1.10, "heap after 1,000 reloads: \(after) bytes, after the first: \(first)")
    }
}

/// Events collected from any thread.
private final class Recorded: @unchecked Sendable {
    private let lock = NSLock()
    private var events: [FeatureEvent] = []
    func append(_ event: FeatureEvent) { lock.withLock { events.append(event) } }
    var all: [FeatureEvent] { lock.withLock { events } }
}
