import Foundation
import LuaKit
@testable import MoonflowDebug
import XCTest

/// The debugger as a locked door, tried as another process on the machine would: the port
/// is reachable by anyone, but only an editor that gives the token is served, and nothing
/// sent before it (a request, a breakpoint with a condition, a web page's POST) runs.
final class DebuggerDoorTests: XCTestCase {
    private var folder: URL!
    /// A script whose line 2 a breakpoint's condition would run at.
    private var script: String { folder.appendingPathComponent("door.lua").path }
    private var marker: String { folder.appendingPathComponent("pwned").path }
    private let source = "local x = 1\nlocal y = x + 1\nreturn y\n"

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("mf-door-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try source.write(toFile: script, atomically: true, encoding: .utf8)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: folder) }

    /// A debugger serving a trusted state (one with `os.execute`), and what it logged.
    private func served() throws -> (LuaState, DebugServer, Logged) {
        let lua = try LuaState(profile: .trusted)
        let logged = Logged()
        let server = try DebugServer(host: "127.0.0.1", port: 0, name: "door") { logged.add($0) }
        XCTAssertTrue(server.controller.serve(lua))
        return (lua, server, logged)
    }

    private var port: (DebugServer) -> Int = { Int($0.address.split(separator: ":").last ?? "") ?? 0 }

    /// A breakpoint whose condition would leave a file behind if it ran.
    private var hostileBreakpoint: LuaValue {
        [
            "source": ["path": LuaValue(script)],
            "breakpoints": [["line": 2, "condition": LuaValue("os.execute('touch \(marker)') or true")]],
        ]
    }

    func testNothingButInitializeIsServedBeforeTheTokenAndNothingRuns() throws {
        let (lua, server, logged) = try served()
        defer { server.close() }

        // A request before attach: refused with the way in, and the connection closed.
        let early = try EditorClient(port: port(server))
        let refused = try early.request("setBreakpoints", hostileBreakpoint)
        XCTAssertEqual(refused["success"]?.boolValue, false)
        XCTAssertTrue(refused["message"]?.stringValue?.contains("setBreakpoints before attach") == true, "\(refused)")
        XCTAssertTrue(refused["message"]?.stringValue?.contains("arguments.token") == true, "it names the way in")
        XCTAssertEqual(refused["body"]?["error"]?["format"], refused["message"])
        XCTAssertNil(try early.nextOrEnd(), "and the connection is closed")

        // initialize is served to anyone; attach without the token or with a wrong one is not.
        for token in [nil, "0123456789abcdef0123456789abcdef", server.access.token.uppercased() + "0"] as [String?] {
            let guess = try EditorClient(port: port(server))
            XCTAssertEqual(try guess.request("initialize")["success"]?.boolValue, true)
            let attach = try guess.request("attach", token.map { ["token": LuaValue($0)] } ?? [:])
            XCTAssertEqual(attach["success"]?.boolValue, false, "token \(token ?? "none")")
            XCTAssertTrue(
                attach["message"]?.stringValue?.contains(token == nil ? "needs the debugger's token" : "wrong token")
                    == true,
                "\(attach)")
            XCTAssertNil(try guess.nextOrEnd(), "closed after a wrong token")
        }

        // The state runs the line the breakpoint was asked for: no condition ran.
        XCTAssertEqual(try lua.run(string: source, name: script), [2])
        XCTAssertFalse(FileManager.default.fileExists(atPath: marker), "nothing an unadmitted connection sent ran")
        XCTAssertTrue(
            logged.lines.contains { $0.contains("refused a connection: setBreakpoints before attach") },
            "\(logged.lines)")

        // The developer, with the token, is served: the same breakpoint's condition runs.
        let editor = try EditorClient(port: port(server))
        _ = try editor.request("initialize")
        XCTAssertEqual(try editor.attach(token: server.access.token)["success"]?.boolValue, true)
        XCTAssertEqual(try editor.event("initialized")["event"]?.stringValue, "initialized")
        XCTAssertEqual(try editor.request("setBreakpoints", hostileBreakpoint)["success"]?.boolValue, true)
        let finished = DispatchSemaphore(value: 0)
        let source = self.source, script = self.script
        Thread {
            _ = try? lua.run(string: source, name: script)
            finished.signal()
        }.start()
        XCTAssertEqual(try editor.event("stopped")["body"]?["reason"]?.stringValue, "breakpoint")
        XCTAssertTrue(FileManager.default.fileExists(atPath: marker), "the developer's condition ran")
        _ = try editor.request("continue", ["threadId": 1])
        XCTAssertEqual(finished.wait(timeout: .now() + 30), .success)
    }

    /// A web page can make the browser POST to any loopback port (`fetch(url, {mode:
    /// "no-cors", method: "POST", body})`); the body would be a DAP message to a reader that
    /// looked only for Content-Length.
    func testAWebPagesPostIsClosedUnreadAndRunsNothing() throws {
        let (lua, server, logged) = try served()
        defer { server.close() }
        let body = try LuaValue([
            "type": "request", "seq": 1, "command": "setBreakpoints", "arguments": hostileBreakpoint,
        ]).json()
        let post =
            "POST / HTTP/1.1\r\nHost: 127.0.0.1:\(port(server))\r\nOrigin: https://attacker.example\r\n"
            + "Content-Type: text/plain;charset=UTF-8\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
        let page = try EditorClient(port: port(server))
        try page.write(Array(post.utf8))
        XCTAssertNil(try page.nextOrEnd(), "closed, nothing written back")
        XCTAssertEqual(try lua.run(string: source, name: script), [2])
        XCTAssertFalse(FileManager.default.fileExists(atPath: marker))
        let give = Date().addingTimeInterval(30)
        while !logged.lines.contains(where: { $0.contains("an HTTP request, refused") }), Date() < give {
            Thread.sleep(forTimeInterval: 0.01)
        }
        XCTAssertTrue(
            logged.lines.contains { $0.contains("\"POST / HTTP/1.1\" is not a DAP header") }, "\(logged.lines)")
    }

    func testTheTokenIsWrittenForItsUserAloneAndTakenAwayOnClose() throws {
        let (_, server, _) = try served()
        let file = try XCTUnwrap(server.access.file, "written where XDG_RUNTIME_DIR or HOME says")
        XCTAssertEqual(try String(contentsOfFile: file, encoding: .utf8), server.access.token + "\n")
        XCTAssertEqual(server.access.token.count, 32)
        XCTAssertTrue(DebugAccess.isToken(server.access.token))
        let attributes = try FileManager.default.attributesOfItem(atPath: file)
        XCTAssertEqual((attributes[.posixPermissions] as? NSNumber)?.intValue, 0o600)
        let folder = try FileManager.default.attributesOfItem(atPath: (file as NSString).deletingLastPathComponent)
        XCTAssertEqual(
            ((folder[.posixPermissions] as? NSNumber)?.intValue ?? 0) & 0o077, 0, "the folder is the user's alone")
        XCTAssertTrue(file.hasSuffix("debug-\(port(server)).token"))
        XCTAssertTrue(
            server.announcement.contains("with token \(server.access.token) (in \(file))"), server.announcement)
        let other = try DebugServer(host: "127.0.0.1", port: 0, name: "other") { _ in }
        XCTAssertNotEqual(other.access.token, server.access.token, "each debugger its own")
        other.close()
        server.close()
        XCTAssertFalse(FileManager.default.fileExists(atPath: file))
    }

    func testAGivenTokenMustBe32HexDigits() throws {
        XCTAssertThrowsError(try DebugServer(host: "127.0.0.1", port: 0, name: "x", token: "secret") { _ in }) {
            error in
            XCTAssertTrue("\(error)".contains("32 hex digits"), "\(error)")
        }
        let fixed = "00112233445566778899aabbccddeeff"
        let server = try DebugServer(host: "127.0.0.1", port: 0, name: "x", token: fixed) { _ in }
        defer { server.close() }
        XCTAssertEqual(server.access.token, fixed)
    }

    /// Connections that never give the token neither hold the editor's slot nor pile up:
    /// past `maxWaiting` the oldest is ended, so the developer's editor still gets in.
    func testAFloodOfIdleConnectionsLeavesTheEditorAbleToAttach() throws {
        let (_, server, _) = try served()
        defer { server.close() }
        // An editor that has begun (sent initialize) is not the one a flood ends.
        let early = try EditorClient(port: port(server))
        XCTAssertEqual(try early.request("initialize")["success"]?.boolValue, true)
        // 200 idle connections, 25 times the most held at once (DAPListener.maxWaiting). With
        // 1,000, opening them under ThreadSanitizer on a loaded box outlasted the early
        // editor's 10 s to give the token, which ended it by that other rule.
        let idle = try (0..<200).map { _ in try RawSocket(port: port(server)) }
        XCTAssertEqual(try early.attach(token: server.access.token)["success"]?.boolValue, true)
        XCTAssertEqual(try early.request("disconnect")["success"]?.boolValue, true)
        XCTAssertNil(try early.nextOrEnd())
        // One that comes after the flood gets in too.
        var editor = try EditorClient(port: port(server))
        XCTAssertEqual(try editor.request("initialize")["success"]?.boolValue, true)
        var attached = try editor.attach(token: server.access.token)
        // the early one's slot is freed as its thread ends
        for _ in 0..<100 where attached["success"]?.boolValue != true {
            Thread.sleep(forTimeInterval: 0.02)
            editor = try EditorClient(port: port(server))
            _ = try editor.request("initialize")
            attached = try editor.attach(token: server.access.token)
        }
        XCTAssertEqual(attached["success"]?.boolValue, true, "\(attached)")
        XCTAssertEqual(try editor.request("threads")["body"]?["threads"]?[0]?["name"]?.stringValue, "door")
        XCTAssertTrue(idle[0].ended(within: 30), "the oldest idle connection was ended")
        XCTAssertFalse(idle[199].ended(within: 0.2), "the newest waits, within the bound")
    }

    func testAConnectionThatDoesNotGiveTheTokenInTimeIsEnded() throws {
        let listener = try DAPListener(host: "127.0.0.1", port: 0, admitTimeout: 0.3)
        defer { listener.close() }
        let target = NothingTarget()
        listener.start {
            DAPSession(connection: $0, target: target, access: try? DebugAccess(address: "here", port: 0)).run()
        }
        let idle = try RawSocket(port: listener.port)
        XCTAssertTrue(idle.ended(within: 30), "ended once its time to give the token passed")
    }
}

/// Lines a debugger logged, from its threads.
final class Logged: @unchecked Sendable {
    private let lock = NSLock()
    private var _lines: [String] = []
    func add(_ line: String) { lock.withLock { _lines.append(line) } }
    var lines: [String] { lock.withLock { _lines } }
}

/// A connection that sends nothing: what a port scanner, or an idle attacker, holds open.
final class RawSocket {
    let fd: Int32

    init(port: Int) throws { fd = try EditorClient.connected(port: port) }

    deinit { close(fd) }

    /// Whether the other end closed the connection within `seconds`.
    func ended(within seconds: Double) -> Bool {
        var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&ready, 1, Int32(seconds * 1000)) == 1 else { return false }
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, Int32(MSG_DONTWAIT)) <= 0
    }
}

/// A target with nothing to show.
final class NothingTarget: DebugTarget, @unchecked Sendable {
    func threads() -> [DebugThread] { [] }
    func setBreakpoints(path: String, _ requested: [BreakpointRequest]) -> [PlacedBreakpoint] { [] }
    func setExceptionFilters(_ filters: Set<ExceptionFilter>) {}
    func configurationDone() {}
    func detach() {}
    func stackTrace() -> Result<[LuaFrame], any Error>? { nil }
    func variables(_ reference: Int) -> Result<[LuaVariable], any Error>? { nil }
    func evaluate(_ expression: String, frame level: Int) -> Result<LuaVariable, any Error>? { nil }
    func resume(_ mode: LuaResume) -> Bool { false }
    func pause() {}
}
