import Foundation
import LuaKit
@testable import MoonflowDebug
import XCTest

/// A Lua thread stopped under an editor: the editor reads its frames, scopes, variables and
/// expressions over the protocol while it waits, then lets it go on. The stop here is a
/// Swift function the script calls (what a breakpoint's hook will call).
final class DebugControllerTests: XCTestCase {
    private let script = """
        local shared = { hits = 3 }
        local function reduce(state, mutation)
          local doubled = mutation.by * 2 * (shared.hits // 3)
          stop()
          state.count = state.count + doubled
          return state.count
        end
        local state = { count = 1, items = { "a", "b" } }
        return (reduce(state, { type = "add", by = 21 }))
        """

    func testAnEditorReadsAStoppedReduceAndLetsItGoOn() throws {
        let (lua, listener, editor) = try stoppable(name: "counter")
        defer { listener.close() }
        _ = try editor.request("initialize")
        _ = try editor.request("attach")
        _ = try editor.request("configurationDone")

        final class Outcome: @unchecked Sendable { var values: [LuaValue]?; var error: (any Error)? }
        let outcome = Outcome()
        let finished = DispatchSemaphore(value: 0)
        let script = self.script
        Thread {
            do { outcome.values = try lua.run(string: script, name: "plugins/counter/init.lua") } catch {
                outcome.error = error
            }
            finished.signal()
        }.start()

        let stopped = try editor.event("stopped")
        XCTAssertEqual(stopped["body"]?["reason"]?.stringValue, "breakpoint")
        XCTAssertEqual(try editor.request("threads")["body"]?["threads"]?[0]?["name"]?.stringValue, "counter")

        let trace = try editor.request("stackTrace", ["threadId": 1])
        let frames = try XCTUnwrap(trace["body"]?["stackFrames"])
        XCTAssertEqual(frames[0]?["name"]?.stringValue, "reduce")
        XCTAssertEqual(frames[0]?["line"]?.intValue, 4)
        XCTAssertEqual(
            frames[0]?["source"]?["path"]?.stringValue,
            FileManager.default.currentDirectoryPath + "/plugins/counter/init.lua", "absolute, as editors open files")
        XCTAssertEqual(frames[1]?["line"]?.intValue, 9)

        let scopes = try editor.request("scopes", ["frameId": 1])
        let locals = try XCTUnwrap(scopes["body"]?["scopes"]?[0]?["variablesReference"]?.intValue)
        let variables = try editor.request("variables", ["variablesReference": LuaValue(locals)])
        let listed = try XCTUnwrap(variables["body"]?["variables"])
        XCTAssertEqual(listed[0]?["name"]?.stringValue, "state")
        XCTAssertEqual(listed[2]?["name"]?.stringValue, "doubled")
        XCTAssertEqual(listed[2]?["value"]?.stringValue, "42")
        let stateRef = try XCTUnwrap(listed[0]?["variablesReference"]?.intValue)
        XCTAssertGreaterThan(stateRef, 0, "a table opens")
        let fields = try editor.request("variables", ["variablesReference": LuaValue(stateRef)])
        XCTAssertEqual(fields["body"]?["variables"]?[0]?["name"]?.stringValue, "count")
        XCTAssertEqual(fields["body"]?["variables"]?[0]?["value"]?.stringValue, "1")

        let upvalues = try XCTUnwrap(scopes["body"]?["scopes"]?[1]?["variablesReference"]?.intValue)
        XCTAssertEqual(
            try editor.request("variables", ["variablesReference": LuaValue(upvalues)])["body"]?["variables"]?[0]?[
                "name"]?.stringValue,
            "shared")

        let sum = try editor.request("evaluate", ["expression": "state.count + doubled", "frameId": 1])
        XCTAssertEqual(sum["body"]?["result"]?.stringValue, "43")
        let write = try editor.request("evaluate", ["expression": "(function() state.count = 0 end)()", "frameId": 1])
        XCTAssertEqual(write["success"]?.boolValue, false)
        XCTAssertTrue(write["message"]?.stringValue?.contains("evaluate cannot change a table") == true, "\(write)")

        XCTAssertEqual(try editor.request("continue", ["threadId": 1])["success"]?.boolValue, true)
        XCTAssertEqual(try editor.event("continued")["body"]?["threadId"]?.intValue, 1)
        XCTAssertEqual(finished.wait(timeout: .now() + 30), .success, "the script went on")
        XCTAssertNil(outcome.error)
        XCTAssertEqual(outcome.values, [43], "the refused write left the state as it was")

        let late = try editor.request("stackTrace", ["threadId": 1])
        XCTAssertEqual(late["success"]?.boolValue, false)
        XCTAssertTrue(late["message"]?.stringValue?.contains("the run is not stopped") == true)
    }

    func testAnEditorThatGoesAwayLetsAStoppedThreadGoOn() throws {
        let (lua, listener, editor) = try stoppable()
        defer { listener.close() }
        _ = try editor.request("initialize")
        let finished = DispatchSemaphore(value: 0)
        let script = self.script
        Thread {
            _ = try? lua.run(string: script, name: "plugins/counter/init.lua")
            finished.signal()
        }.start()
        _ = try editor.event("stopped")
        _ = try editor.request("disconnect")
        XCTAssertEqual(finished.wait(timeout: .now() + 30), .success, "disconnect let the script go on")
    }

    /// An editor attaches as soon as the address is printed, so it may set its exception
    /// filters while the run is still serving its feature's state: the state must stop on
    /// the filters set last, whichever comes first (check-dap saw a caught error run past
    /// once in 50 sessions). Serving gives a state each file's breakpoints first, so with
    /// many files the two overlap in most rounds.
    func testAStateServedWhileTheEditorSetsFiltersGetsTheNewest() throws {
        let controller = DebugController(name: "race")
        for n in 0..<400 { _ = controller.setBreakpoints(path: "/nowhere/\(n).lua", [BreakpointRequest(line: 1)]) }
        var stale: [Int] = []
        for round in 0..<200 {
            let lua = try LuaState(profile: .trusted)
            let filters: Set<ExceptionFilter> = round % 2 == 0 ? [.all] : []
            DispatchQueue.concurrentPerform(iterations: 2) { side in
                if side == 0 { controller.serve(lua) } else { controller.setExceptionFilters(filters) }
            }
            let stops = lua.stopsOnErrors
            if stops.uncaught != !filters.isEmpty || stops.caught != filters.contains(.all) { stale.append(round) }
        }
        XCTAssertEqual(stale, [], "these rounds' states kept the filters from before the editor's change")
    }

    /// A Lua state whose global `stop()` stops it under a debug controller, and an editor
    /// connected to the controller's session.
    private func stoppable(name: String = "main") throws -> (LuaState, DAPListener, EditorClient) {
        let lua = try LuaState(profile: .trusted)
        let controller = DebugController(holder: try lua.makeTable([]), name: name)
        try lua.setGlobal(
            "stop",
            .function { slots in
                controller.stop(slots, reason: "breakpoint")
                return []
            })
        let listener = try DAPListener(host: "127.0.0.1", port: 0)
        listener.start { connection in
            let session = DAPSession(connection: connection, target: controller)
            controller.attach(session)
            session.run()
        }
        return (lua, listener, try EditorClient(port: listener.port))
    }
}
