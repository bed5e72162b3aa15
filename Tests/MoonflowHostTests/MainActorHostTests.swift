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

    private func probe(_ mode: String) throws -> (Int32, String) {
        let built = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        let process = Process()
        process.executableURL = built.appendingPathComponent("moonflow-embedding-probe")
        process.arguments = [mode]
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
