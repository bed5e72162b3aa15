import Foundation
import Hummingbird
import LuaKit
import MoonflowEvents
@testable import MoonflowInspector
import MoonflowRun
import PluginFixtures
import XCTest

/// What one inspector or dev server takes from the network before it knows who asks: a
/// connection that does not show the token soon is closed, at most so many are open, and a
/// request line too long for any URL the server makes gets 414 (round three: 2,000 idle or
/// half-sent connections held 2,016 descriptors and 212 MB, and a 100 KB URI got no answer).
final class ConnectionLimitsTests: XCTestCase {
    private func server(_ limits: InspectorServer.ConnectionLimits) throws -> (InspectorServer, Int) {
        let server = InspectorServer(hub: InspectorHub(), connectionLimits: limits)
        let url = try server.start()
        return (server, try XCTUnwrap(URLComponents(string: url)?.port))
    }

    /// Reads until the server closes the connection (true) or 30 s pass (false).
    private func closedByServer(_ fd: Int32) -> Bool {
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = read(fd, &buffer, buffer.count)
            if n == 0 { return true }
            if n < 0 && errno == EINTR { continue }
            if n < 0 { return errno == ECONNRESET }
        }
    }

    /// A connection on loopback that sends `text` (nothing, or half a request) and waits.
    private func connection(_ port: Int, sending text: String = "") throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { close(fd); throw Failure("connect: errno \(errno)") }
        if !text.isEmpty { _ = Array(text.utf8).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } }
        return fd
    }

    func testAConnectionThatDoesNotShowTheTokenInTimeIsClosed_AndAPageThatDidStays() async throws {
        var limits = InspectorServer.ConnectionLimits()
        limits.authentication = .milliseconds(200)
        let (server, port) = try server(limits)
        defer { Task { await server.stop() } }
        let page = try await Page.open("ws://127.0.0.1:\(port)/ws?token=\(server.token)")
        defer { page.close() }
        _ = try await page.frames(count: 1)
        let idle = try connection(port)
        defer { close(idle) }
        let slow = try connection(port, sending: "GET /?token=\(server.token) HT")
        defer { close(slow) }
        let refused = try connection(port, sending: "GET / HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n")
        defer { close(refused) }
        XCTAssertTrue(closedByServer(idle), "a connection that sends nothing")
        XCTAssertTrue(closedByServer(slow), "a request line that never ends")
        XCTAssertTrue(closedByServer(refused), "a request without the token, answered 403 and kept alive")
        // The page connected before them, and is still there.
        try await page.send(#"{"cmd":"nope"}"#)
        let frames = try await page.frames(count: 2)
        XCTAssertEqual(frames[1]["ok"], false)
    }

    func testPastTheLimitAConnectionIsClosedAtOnce_AndTakenAgainOnceOneCloses() throws {
        var limits = InspectorServer.ConnectionLimits()
        limits.connections = 3
        limits.authentication = .seconds(120)  // only the closed connection frees a place
        let (server, port) = try server(limits)
        defer { Task { await server.stop() } }
        func waitFor(_ count: Int) throws {
            let deadline = Date().addingTimeInterval(30)
            while server.connectionCount != count {
                guard Date() < deadline else { throw Failure("\(server.connectionCount) connections, not \(count)") }
                Thread.sleep(forTimeInterval: 0.005)
            }
        }
        var held: [Int32] = []
        for n in 1...3 {
            held.append(try connection(port))
            try waitFor(n)
        }
        let extra = try connection(port)
        defer { close(extra) }
        XCTAssertTrue(closedByServer(extra))
        close(held[0])
        try waitFor(2)
        let deadline = Date().addingTimeInterval(30)
        var status = 0
        while status != 200 && Date() < deadline {
            status =
                (try? RawHTTP.send(
                    ["GET /?token=\(server.token) HTTP/1.1", "Host: 127.0.0.1:\(port)", "Connection: close"], port: port
                ).status) ?? 0
            if status != 200 { Thread.sleep(forTimeInterval: 0.01) }
        }
        XCTAssertEqual(status, 200)
        for fd in held.dropFirst() { close(fd) }
    }

    func testALongRequestLineGets414() throws {
        let (server, port) = try server(InspectorServer.ConnectionLimits())
        defer { Task { await server.stop() } }
        let long = String(repeating: "a", count: 20_000)
        let answer = try RawHTTP.send(
            ["GET /\(long)?token=\(server.token) HTTP/1.1", "Host: 127.0.0.1:\(port)"], port: port)
        XCTAssertEqual(answer.status, 414, answer.body)
        XCTAssertEqual(
            try RawHTTP.send(
                ["GET /?token=\(server.token) HTTP/1.1", "Host: 127.0.0.1:\(port)", "Connection: close"], port: port
            ).status, 200)
    }

    /// `stop` closes the port and the pages on it.
    func testAStoppedServerClosesItsPortAndItsPages() async throws {
        let (server, port) = try server(InspectorServer.ConnectionLimits())
        let page = try await Page.open("ws://127.0.0.1:\(port)/ws?token=\(server.token)")
        defer { page.close() }
        _ = try await page.frames(count: 1)
        await server.stop()
        XCTAssertThrowsError(try connection(port))
    }

    /// A page's dispatch the feature refuses is answered with why and is not an input: the
    /// recording (what `replay` sends again) and the inspector's `rerun` never see it.
    func testARefusedPageDispatchIsNoInputOfTheRecording() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("refused-\(UUID().uuidString).jsonl")
            .path
        defer { try? FileManager.default.removeItem(atPath: file) }
        let recorder = try SessionRecorder(path: file)
        let inspected = try InspectedRun(observers: [recorder])
        defer { inspected.stop() }
        try inspected.waitForFrames(1)
        let page = try await Page.open(
            inspected.url.replacingOccurrences(of: "http://", with: "ws://").replacingOccurrences(
                of: "/?token=", with: "/ws?token="))
        defer { page.close() }
        _ = try await page.frames(count: 2)
        try await page.send(#"{"cmd":"dispatch","action":{"type":"increment","by":"x"}}"#)
        try await page.send(#"{"cmd":"dispatch","action":{"type":"nosuch"}}"#)
        try await page.send(#"{"cmd":"dispatch","action":{"type":"increment","by":2}}"#)
        // Three replies, and the accepted action's action, mutation and state frames.
        let replies = try await page.frames(count: 8).filter { $0["event"] == "reply" }
        XCTAssertEqual(replies.count, 3, "\(page.all)")
        XCTAssertEqual(replies.map { $0["ok"] }, [false, false, true])
        try inspected.waitForFrames(4)
        let recorded = try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n").filter {
            $0.hasPrefix("{\"input\"")
        }
        XCTAssertEqual(recorded.count, 1, "\(recorded)")
        XCTAssertTrue(recorded.first?.contains("\"by\":2") ?? false, "\(recorded)")
    }
}
