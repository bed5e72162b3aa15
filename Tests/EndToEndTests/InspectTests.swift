import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import XCTest

/// `moonflow run --inspect`: the binary prints where its inspector is and serves it
/// while the run goes on (the protocol itself: MoonflowInspectorTests).
final class InspectTests: XCTestCase {
    func testInspectPrintsTheURLServesThePageAndKeepsTakingInputUntilSIGINT() throws {
        let run = try Session(
            ["run", "plugins/counter", "--inspect", "--format", "jsonl", "--actions", "-"], in: Moonflow.root)
        defer { run.kill() }
        try run.waitFor(#""state":{"count":0}"#)
        let first = run.lines[0]
        let match = try XCTUnwrap(
            first.range(
                of: #"^\{"event":"inspector","t":0,"url":"http://127\.0\.0\.1:[0-9]+/\?token=[0-9a-f]{32}"\}$"#,
                options: .regularExpression), first)
        XCTAssertEqual(match, first.startIndex..<first.endIndex)
        let url = String(first.split(separator: "\"")[9])

        let (status, body) = try get(url)
        XCTAssertEqual(status, 200)
        XCTAssertTrue(body.contains("moonflow inspector"))
        XCTAssertEqual(try get(url.replacingOccurrences(of: "token=", with: "token=x")).status, 403)

        run.send(#"{"type":"increment"}"#)
        try run.waitFor(#""state":{"count":1}"#)
        run.closeInput()
        // The input ended; the inspector stays until the user stops the run.
        XCTAssertEqual(try get(url).status, 200)
        XCTAssertEqual(try run.interrupt(), 0)
    }

    func testInspectSaysWhatItNeeds() throws {
        let virtual = try Moonflow.run(["run", "plugins/counter", "--clock", "virtual", "--inspect"])
        XCTAssertEqual(virtual.status, 2)
        XCTAssertTrue(virtual.stderr.contains("--inspect runs on the real clock"), virtual.stderr)
        let bad = try Moonflow.run(["run", "plugins/counter", "--inspect", "localhost:99999"])
        XCTAssertEqual(bad.status, 2)
        XCTAssertTrue(
            bad.stderr.contains(
                "--inspect localhost:99999: give HOST:PORT (127.0.0.1:8080), or :0 for any free port on loopback"),
            bad.stderr)
    }

    func testAnInspectorReachableFromTheNetworkSaysSoOnStandardError() throws {
        let open = try inspectorRun(address: "0.0.0.0:0")
        XCTAssertFalse(open.url.hasPrefix("http://0.0.0.0:"), "a URL a device can open: \(open.url)")
        XCTAssertTrue(
            open.stderr.contains("moonflow: warning: --inspect 0.0.0.0:0 is reachable from the network"), open.stderr)
        let local = try inspectorRun(address: "127.0.0.1:0")
        XCTAssertFalse(local.stderr.contains("warning"), local.stderr)
    }

    /// `moonflow run plugins/counter --inspect ADDRESS`, stopped with SIGINT once it printed
    /// the inspector's URL: that URL and what it wrote to standard error.
    private func inspectorRun(address: String) throws -> (url: String, stderr: String) {
        let process = Process()
        process.executableURL = try Moonflow.binary()
        process.arguments = ["run", "plugins/counter", "--inspect", address, "--format", "jsonl", "--actions", "-"]
        process.currentDirectoryURL = Moonflow.root
        let errors = FileManager.default.temporaryDirectory.appendingPathComponent(
            "moonflow-inspect-\(UUID().uuidString)")
        _ = FileManager.default.createFile(atPath: errors.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: errors) }
        let errorHandle = try FileHandle(forWritingTo: errors)
        let output = Pipe(), input = Pipe()
        process.standardOutput = output
        process.standardError = errorHandle
        process.standardInput = input
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        var printed = ""
        while !printed.contains("\n") {
            let data = output.fileHandleForReading.availableData
            if data.isEmpty { break }
            printed += String(decoding: data, as: UTF8.self)
        }
        process.interrupt()
        process.waitUntilExit()
        try errorHandle.close()
        let line = printed.split(separator: "\n").first.map(String.init) ?? ""
        let url =
            line.components(separatedBy: "\"url\":\"").dropFirst().first?.components(separatedBy: "\"").first ?? line
        return (url, try String(contentsOf: errors, encoding: .utf8))
    }

    private func get(_ address: String) throws -> (status: Int, body: String) {
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var result: (Int, String) = (0, "")
        nonisolated(unsafe) var failure: (any Error)?
        URLSession.shared.dataTask(with: URL(string: address)!) { data, response, error in
            failure = error
            result = (
                (response as? HTTPURLResponse)?.statusCode ?? 0, data.map { String(decoding: $0, as: UTF8.self) } ?? ""
            )
            done.signal()
        }.resume()
        done.wait()
        if let failure { throw failure }
        return result
    }
}
