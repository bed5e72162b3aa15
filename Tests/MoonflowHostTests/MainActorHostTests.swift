import Foundation
import XCTest

/// A main-actor host (`executor: .mainActor`) from an app's own `main`, run as a process of
/// its own (`moonflow-embedding-probe`, Tests/EmbeddingProbe): a plain main on the main
/// thread, and the main actor's tasks after `dispatchMain()`, as a Swift `async` main runs
/// them. On Linux those resume off the main thread once the main actor has suspended: the
/// host asked the thread, not the main queue, and `load` died in `DispatchQueue.main.sync`
/// (SIGILL) whether it was awaited or not.
final class MainActorHostTests: XCTestCase {
    func testATypedBurstReachesTheFieldFromEveryKindOfMain() throws {
        for mode in ["sync", "async", "async-sync-load"] {
            let (status, output) = try probe(mode)
            XCTAssertEqual(status, 0, "\(mode): \(output)")
            XCTAssertTrue(output.contains("text: hello, moonflow"), "\(mode): \(output)")
        }
    }

    /// Another thread queues 3,000 slow actions while main waits; then main's queue gets a turn
    /// before they are all reduced (a drain on the main thread hands it back every 4 ms). Before,
    /// the drain held main to the end: its first turn came with 3000 of 3000 reduced, and a
    /// 60 Hz timer drew 1 frame in 260 ms.
    func testAFloodFromAnotherThreadLeavesTheMainQueueTurns() throws {
        for main in ["sync", "async"] {
            let (status, output) = try probe("flood", main)
            XCTAssertEqual(status, 0, "\(main): \(output)")
            XCTAssertTrue(output.contains("reduced: 3000"), "every action is reduced, in the end: \(main): \(output)")
        }
    }

    /// `send(json:)` from a thread main waits for returns: it used to parse on the state
    /// executor, the main thread, and wait for it, which waited for the sender.
    func testSendJSONFromAThreadMainWaitsForReturns() throws {
        for main in ["sync", "async"] {
            let (status, output) = try probe("json-while-main-waits", main)
            XCTAssertEqual(status, 0, "\(main): \(output)")
            XCTAssertTrue(output.contains("text: hello, moonflow"), "\(main): \(output)")
        }
    }

    /// On a queue host, main reads `state` while an observer on the host's queue waits for
    /// main: the read returns. It used to wait for the queue to take the writes still in Lua.
    func testReadingStateNeverWaitsForTheHostsQueue() throws {
        for main in ["sync", "async"] {
            let (status, output) = try probe("state-while-observer-waits", main)
            XCTAssertEqual(status, 0, "\(main): \(output)")
            XCTAssertTrue(output.contains("text: hello, moonflow"), "\(main): \(output)")
        }
    }

    /// `MainActorHost`: `send`, `observe` (a main-actor callback) and a view model, all on the
    /// main actor by type, under a plain main with a run loop and under an async main.
    func testAMainActorHostTypesIntoAFieldFromEveryKindOfMain() throws {
        for main in ["sync", "async"] {
            let (status, output) = try probe("typed", main)
            XCTAssertEqual(status, 0, "\(main): \(output)")
            XCTAssertTrue(output.contains("text: hello, moonflow"), "\(main): \(output)")
            XCTAssertTrue(output.contains("states observed: 16"), "the first state and one per key: \(main): \(output)")
        }
    }

    /// A synchronous `load` on a main-actor host from a thread main waits for throws, saying to
    /// await it; it used to wait for the main thread, which waited for it.
    func testASynchronousLoadOffTheMainActorSaysToAwaitIt() throws {
        for main in ["sync", "async"] {
            let (status, output) = try probe("load-off-main", main)
            XCTAssertEqual(status, 0, "\(main): \(output)")
            XCTAssertTrue(output.contains("refused: ") && output.contains("try await host.load(\"field\")"), "\(main): \(output)")
        }
    }

    private func probe(_ mode: String...) throws -> (Int32, String) {
        let built = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        let process = Process()
        process.executableURL = built.appendingPathComponent("moonflow-embedding-probe")
        process.arguments = mode
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFT_BACKTRACE"] = "enable=no"
        process.environment = environment
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}
