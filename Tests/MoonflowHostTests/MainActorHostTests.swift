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
            try expectProbe([mode], exitsWith: ["text: hello, moonflow"])
        }
    }

    /// Another thread queues 3,000 slow actions while main waits; then main's queue gets a turn
    /// before they are all reduced (a drain on the main thread hands it back every 4 ms). Before,
    /// the drain held main to the end: its first turn came with 3000 of 3000 reduced, and a
    /// 60 Hz timer drew 1 frame in 260 ms.
    func testAFloodFromAnotherThreadLeavesTheMainQueueTurns() throws {
        try expectOnEveryMain("flood", exitsWith: ["reduced: 3000"])
    }

    /// `send(json:)` from a thread main waits for returns: it used to parse on the state
    /// executor, the main thread, and wait for it, which waited for the sender.
    func testSendJSONFromAThreadMainWaitsForReturns() throws {
        try expectOnEveryMain("json-while-main-waits", exitsWith: ["text: hello, moonflow"])
    }

    /// On a queue host, main reads `state` while an observer on the host's queue waits for
    /// main: the read returns. It used to wait for the queue to take the writes still in Lua.
    func testReadingStateNeverWaitsForTheHostsQueue() throws {
        try expectOnEveryMain("state-while-observer-waits", exitsWith: ["text: hello, moonflow"])
    }

    /// `MainActorHost`: `send`, `observe` (a main-actor callback) and a view model, all on the
    /// main actor by type, under a plain main with a run loop and under an async main. 16
    /// states observed: the first state and one per key.
    func testAMainActorHostTypesIntoAFieldFromEveryKindOfMain() throws {
        try expectOnEveryMain("typed", exitsWith: ["text: hello, moonflow", "states observed: 16"])
    }

    /// Lifetimes as documented, on a main-actor host: the app lets the host go and the feature
    /// keeps it (a Swift service still answers); another thread disposes the feature while
    /// actions flow, and the view model and `state` agree afterwards.
    func testLifetimesHoldOnEveryKindOfMain() throws {
        try expectOnEveryMain(
            "lifetimes", exitsWith: ["the service answered after the host was let go", "the view and the state agree"])
    }

    /// A synchronous `load` on a main-actor host from a thread main waits for throws, saying to
    /// await it; it used to wait for the main thread, which waited for it.
    func testASynchronousLoadOffTheMainActorSaysToAwaitIt() throws {
        try expectOnEveryMain("load-off-main", exitsWith: ["refused: ", "try await host.load(\"field\")"])
    }

    /// Runs the probe's `scenario` under a plain main with a run loop and under an async main.
    private func expectOnEveryMain(_ scenario: String, exitsWith texts: [String], line: UInt = #line) throws {
        for main in ["sync", "async"] { try expectProbe([scenario, main], exitsWith: texts, line: line) }
    }

    /// The probe run with `arguments` exits 0 and prints each of `texts`.
    private func expectProbe(_ arguments: [String], exitsWith texts: [String], line: UInt = #line) throws {
        let (status, output) = try probe(arguments)
        let what = arguments.joined(separator: " ")
        XCTAssertEqual(status, 0, "\(what): \(output)", line: line)
        for text in texts { XCTAssertTrue(output.contains(text), "\(what): no \(text): \(output)", line: line) }
    }

    private func probe(_ arguments: [String]) throws -> (Int32, String) {
        let built = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        let process = Process()
        process.executableURL = built.appendingPathComponent("moonflow-embedding-probe")
        process.arguments = arguments
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
