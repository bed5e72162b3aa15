import Foundation
import LuaKit
@testable import MoonflowDebug
import MoonflowHost
import XCTest

/// The inspector's "open in the debugger" (`DebugController.open(action:)`): a run that can be
/// repeated stops at the start of the action asked for, in its `handle`, with the state as it
/// was before it. The run here is driven as `moonflow run --clock virtual` drives one: a
/// thread that loads the plugin, tells the controller of each action as it sends it, and
/// loads it again from the start when the controller goes back.
final class OpenActionTests: XCTestCase {
    private static let plugin = """
        local mf = require "moonflow"
        local seen = 0
        return mf.feature {
          name = "ledger",
          initial = { total = 0 },
          state = { total = "integer" },
          actions = { add = { n = "integer" } },
          mutations = { added = { n = "integer" } },
          handle = function(action, state)
            local n = action.n
            return { type = "added", n = n }
          end,
          reduce = function(state, m)
            seen = seen + 1
            state.total = state.total + m.n * seen
            return state
          end,
        }
        """
    private enum Line { static let handleFirst = 10, reduceFirst = 14 }

    func testOpeningAnActionStopsAtItsHandleWithTheStateBeforeIt() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("mf-open-\(UUID().uuidString)")
        let file = folder.appendingPathComponent("ledger/init.lua").path
        try FileManager.default.createDirectory(
            at: folder.appendingPathComponent("ledger"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Self.plugin.write(toFile: file, atomically: true, encoding: .utf8)

        let controller = DebugController(name: "ledger")
        let again = Flag()
        controller.repeats { again.value = true }
        let listener = try DAPListener(host: "127.0.0.1", port: 0)
        defer { listener.close() }
        listener.start { connection in
            let session = DAPSession(connection: connection, target: controller)
            controller.attach(session)
            session.run()
        }
        let editor = try EditorClient(port: listener.port)
        _ = try editor.request("initialize")
        _ = try editor.request("attach")
        _ = try editor.request(
            "setBreakpoints",
            ["source": ["path": LuaValue(file)], "breakpoints": [["line": LuaValue(Line.reduceFirst)]]])
        _ = try editor.request("configurationDone")

        let searchPath = folder.path
        let driver = Thread {
            repeat {
                again.value = false
                guard
                    let host = try? FeatureHost(
                        configuration: .init(searchPaths: [searchPath], clock: .virtual)),
                    controller.serve(host.lua), let feature = try? host.load("ledger")
                else { return }
                feature.start()
                for (index, n) in [5, 7, 1].enumerated() {
                    controller.actionStarting(index + 1)
                    try? feature.send(["type": "add", "n": LuaValue(n)])
                    host.settle()
                    if again.value { break }
                }
            } while again.value
        }
        driver.stackSize = 16 << 20
        driver.start()

        XCTAssertEqual(try editor.event("stopped")["body"]?["reason"]?.stringValue, "breakpoint")
        let asked = controller.open(action: 3)
        XCTAssertNotNil(asked, "the run is stopped")
        if case .failure(let refusal)? = asked { XCTFail("\(refusal)") }
        let opened = try editor.event("stopped")
        XCTAssertEqual(opened["body"]?["reason"]?.stringValue, "goto")
        let top = try editor.request("stackTrace", ["threadId": 1])["body"]?["stackFrames"]?[0]
        XCTAssertEqual(top?["name"]?.stringValue, "handle")
        XCTAssertEqual(top?["line"]?.intValue, Int64(Line.handleFirst))
        func value(_ expression: String) throws -> String? {
            try editor.request("evaluate", ["expression": LuaValue(expression), "frameId": 1])["body"]?["result"]?
                .stringValue
        }
        XCTAssertEqual(try value("action.n"), "1", "the third action")
        XCTAssertEqual(try value("state.total"), "19", "the state before it: 5*1 + 7*2")
        _ = try editor.request("disconnect")
        let ended = Date().addingTimeInterval(30)
        while !driver.isFinished, Date() < ended { Thread.sleep(forTimeInterval: 0.01) }
        XCTAssertTrue(driver.isFinished)
    }
}

/// A flag two threads share.
private final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var set = false
    var value: Bool {
        get { lock.withLock { set } }
        set { lock.withLock { set = newValue } }
    }
}
