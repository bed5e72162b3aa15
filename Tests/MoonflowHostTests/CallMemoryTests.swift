import Foundation
import LuaKit
import MoonflowHost
import MoonflowLua
import PluginFixtures
import XCTest

/// A run that goes back in the debugger runs its plugin again from the load, with a tap that
/// remembers (`ServiceTap(remembering:)`): the re-run's calls are answered as the first run's
/// were, and the Swift service is called once for each call of the run, never twice.
final class CallMemoryTests: XCTestCase {
    func testARerunIsAnsweredFromTheCallsMadeBeforeAndCallsTheServiceNoMore() throws {
        let memory = CallMemory()
        let made = CallCount()
        func run(sends: Int) throws -> [String] {
            let h = try Harness([
                "probe/init.lua": Probe.source(
                    """
                    return mf.task(function(t)
                      local ok, v = t:await(env.services.ticket("a"))
                      t:emit(v)
                    end)
                    """)
            ])
            h.host.bridge.serviceTap = ServiceTap(remembering: memory)
            h.host.register(service: "ticket") { _ in .integer(Int64(made.next())) }
            try h.load()
            for _ in 0..<sends { try h.send(["type": "go"]) }
            h.advance(to: 100)
            return h.log.values
        }
        let first = try run(sends: 2)
        XCTAssertEqual(made.count, 2)
        XCTAssertEqual(try run(sends: 2), first, "the re-run gets the answers the first run got")
        XCTAssertEqual(made.count, 2, "and calls the service no more")
        // Going further than before: the calls past those remembered are made.
        let further = try run(sends: 3)
        XCTAssertEqual(Array(further.prefix(first.count)), first)
        XCTAssertEqual(made.count, 3)
    }
}

private final class CallCount: @unchecked Sendable {
    private let lock = NSLock()
    private var made = 0
    var count: Int { lock.withLock { made } }
    func next() -> Int {
        lock.withLock {
            made += 1
            return made
        }
    }
}
