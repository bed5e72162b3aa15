import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import XCTest

/// `moonflow run --inspect`: the binary prints where its inspector is and serves it
/// while the run goes on (the protocol itself: MoonflowInspectorTests).
final class InspectTests: XCTestCase {
    func testInspectPrintsTheURLServesThePageAndKeepsTakingInputUntilSIGINT() throws {
        let run = try Session(["run", "plugins/counter", "--inspect", "--format", "jsonl", "--actions", "-"], in: Moonflow.root)
        defer { run.kill() }
        try run.waitFor(#""state":{"count":0}"#)
        let first = run.lines[0]
        let match = try XCTUnwrap(first.range(of: #"^\{"event":"inspector","t":0,"url":"http://127\.0\.0\.1:[0-9]+/\?token=[0-9a-f]{32}"\}$"#, options: .regularExpression), first)
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
        XCTAssertTrue(bad.stderr.contains("--inspect localhost:99999: give HOST:PORT (127.0.0.1:8080), or :0 for any free port on loopback"), bad.stderr)
    }

    private func get(_ address: String) throws -> (status: Int, body: String) {
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var result: (Int, String) = (0, "")
        nonisolated(unsafe) var failure: (any Error)?
        URLSession.shared.dataTask(with: URL(string: address)!) { data, response, error in
            failure = error
            result = ((response as? HTTPURLResponse)?.statusCode ?? 0, data.map { String(decoding: $0, as: UTF8.self) } ?? "")
            done.signal()
        }.resume()
        done.wait()
        if let failure { throw failure }
        return result
    }
}
