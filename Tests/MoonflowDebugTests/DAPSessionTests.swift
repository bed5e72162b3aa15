import Foundation
import LuaKit
@testable import MoonflowDebug
import XCTest

/// The Debug Adapter Protocol as an editor speaks it: framed JSON over a real loopback
/// socket, requests answered in order, events in between.
final class DAPSessionTests: XCTestCase {
    // MARK: Framing

    func testMessagesSplitAnywhereOrSharingAWriteComeOutWhole() throws {
        let first = try DAPFrameReader.frame(["type": "request", "seq": 1, "command": "initialize"])
        let second = try DAPFrameReader.frame([
            "type": "request", "seq": 2, "command": "threads", "arguments": ["é": "☃"],
        ])
        let stream = first + second
        // Every split point, byte by byte through the header and body of both messages.
        for cut in 1..<stream.count {
            var reader = DAPFrameReader()
            let got = try reader.take(stream[..<cut]) + reader.take(stream[cut...])
            XCTAssertEqual(got.map { $0["seq"]?.intValue }, [1, 2], "split at byte \(cut)")
            XCTAssertEqual(got.last?["arguments"]?["é"]?.stringValue, "☃")
        }
        var reader = DAPFrameReader()
        let oneWrite = try reader.take(stream)
        XCTAssertEqual(oneWrite.count, 2)
    }

    func testContentTypeIsTakenAndTheLengthsNameIsAnyCase() throws {
        let body = #"{"type":"request","seq":7,"command":"threads"}"#
        let bytes = Array(
            "content-length: \(body.utf8.count)\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n\(body)"
                .utf8)
        var reader = DAPFrameReader()
        XCTAssertEqual(try reader.take(bytes).first?["seq"]?.intValue, 7)
    }

    /// What a web page's `fetch` makes the browser send is refused at its first line, and any
    /// header but DAP's two at its own: nothing after it is read as a message.
    func testAnHTTPRequestOrAnyOtherHeaderIsRefusedBeforeItsBody() {
        let body = #"{"type":"request","seq":1,"command":"initialize"}"#
        let cases: [(String, String)] = [
            ("POST / HTTP/1.1\r\n", "an HTTP request, refused"),
            ("GET /json/version HTTP/1.1\r\nHost: 127.0.0.1:9229\r\n\r\n", "an HTTP request, refused"),
            (
                "Content-Length: \(body.utf8.count)\r\nOrigin: https://example.com\r\n\r\n\(body)",
                "\"Origin: https://example.com\" is not a DAP header"
            ),
            (
                "Host: 127.0.0.1\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)",
                "\"Host: 127.0.0.1\" is not a DAP header"
            ),
            ("Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}", "two Content-Lengths"),
        ]
        for (text, expected) in cases {
            var reader = DAPFrameReader()
            XCTAssertThrowsError(try reader.take(Array(text.utf8)), text) { error in
                XCTAssertTrue("\(error)".contains(expected), "\(text): \(error)")
            }
        }
    }

    /// A header block is bounded, and bytes that come one at a time are read as they come:
    /// 45 KB of header without its end is refused once it passes the bound, byte by byte.
    func testAHeaderBlockPastItsBoundIsRefusedWhereItPassesIt() throws {
        var reader = DAPFrameReader()
        let line = Array("Content-Type: \(String(repeating: "x", count: 45_000))".utf8)
        var refusedAt: Int?
        for (i, byte) in line.enumerated() {
            do { _ = try reader.take([byte]) } catch {
                refusedAt = i + 1
                XCTAssertTrue("\(error)".contains("runs past \(DAPFrameReader.maxHeader) bytes"), "\(error)")
                break
            }
        }
        XCTAssertEqual(refusedAt, DAPFrameReader.maxHeader + 1, "refused at the first byte past the bound")
        // Short lines of a long block count too.
        var lines = DAPFrameReader()
        let many = Array(String(repeating: "Content-Type: a\r\n", count: 200).utf8)
        XCTAssertThrowsError(try lines.take(many))
        // And a whole message sent byte by byte comes out whole.
        let message = try DAPFrameReader.frame(["type": "request", "seq": 3, "command": "threads"])
        var bytewise = DAPFrameReader()
        var got: [LuaValue] = []
        for byte in message { got += try bytewise.take([byte]) }
        XCTAssertEqual(got.map { $0["seq"]?.intValue }, [3])
    }

    func testBrokenFramingNamesWhatIsWrong() {
        let cases: [(String, String)] = [
            ("Content-Type: x\r\n\r\n{}", "no Content-Length"),
            ("Content-Length: -1\r\n\r\n", "not a length: \"-1\""),
            ("Content-Length: 9223372036854775808\r\n\r\n", "not a length"),
            ("Content-Length: ten\r\n\r\n", "not a length: \"ten\""),
            ("Content-Length: 99999999999\r\n\r\n", "over the"),
            ("Content-Length: 5\r\n\r\n[1,2]", "not a JSON object"),
            ("Content-Length: 3\r\n\r\n{x}", "not JSON"),
        ]
        for (text, expected) in cases {
            var reader = DAPFrameReader()
            XCTAssertThrowsError(try reader.take(Array(text.utf8)), text) { error in
                XCTAssertTrue("\(error)".contains(expected), "\(text): \(error)")
            }
        }
    }

    // MARK: A session over a socket

    func testAnEditorInitializesSetsBreakpointsListsThreadsAndDisconnects() throws {
        let target = RecordingTarget()
        let (listener, editor) = try connect(target)
        defer { listener.close() }

        let initialized = try editor.request("initialize", ["adapterID": "moonflow", "linesStartAt1": true])
        XCTAssertEqual(initialized["success"]?.boolValue, true)
        XCTAssertEqual(initialized["body"]?["supportsConditionalBreakpoints"]?.boolValue, true)
        XCTAssertEqual(initialized["body"]?["exceptionBreakpointFilters"]?[0]?["filter"]?.stringValue, "all")
        XCTAssertEqual(initialized["body"]?["exceptionBreakpointFilters"]?[1]?["filter"]?.stringValue, "uncaught")
        XCTAssertEqual(initialized["body"]?["supportsDelayedStackTraceLoading"]?.boolValue, true)

        XCTAssertEqual(try editor.request("attach")["success"]?.boolValue, true)
        XCTAssertEqual(try editor.next()["event"]?.stringValue, "initialized", "configuration is taken once attached")
        let placed = try editor.request(
            "setBreakpoints",
            [
                "source": ["path": "plugins/counter/init.lua"],
                "breakpoints": LuaValue([
                    ["line": 4], ["line": 9, "condition": "state.count > 2", "hitCondition": ">= 3"],
                    ["line": 12, "logMessage": "count is {state.count}"],
                ]),
            ])
        XCTAssertEqual(placed["body"]?["breakpoints"]?[0]?["verified"]?.boolValue, true)
        XCTAssertEqual(placed["body"]?["breakpoints"]?[0]?["line"]?.intValue, 5, "moved to the next line with code")
        XCTAssertEqual(placed["body"]?["breakpoints"]?[2]?["verified"]?.boolValue, false)
        XCTAssertEqual(placed["body"]?["breakpoints"]?[2]?["message"]?.stringValue, "no code at or after line 12")
        XCTAssertEqual(
            target.breakpoints["plugins/counter/init.lua"],
            [
                BreakpointRequest(line: 4),
                BreakpointRequest(line: 9, condition: "state.count > 2", hitCondition: ">= 3"),
                BreakpointRequest(line: 12, logMessage: "count is {state.count}"),
            ])

        XCTAssertEqual(
            try editor.request("setExceptionBreakpoints", ["filters": LuaValue(["uncaught"])])["success"]?.boolValue,
            true)
        XCTAssertEqual(target.filters, [.uncaught])
        XCTAssertFalse(target.configured)
        XCTAssertEqual(try editor.request("configurationDone")["success"]?.boolValue, true)
        XCTAssertTrue(target.configured)

        let threads = try editor.request("threads")
        XCTAssertEqual(threads["body"]?["threads"]?[0]?["name"]?.stringValue, "counter")
        XCTAssertEqual(threads["body"]?["threads"]?[1]?["id"]?.intValue, 2)

        XCTAssertEqual(try editor.request("disconnect")["success"]?.boolValue, true)
        XCTAssertNil(try editor.nextOrEnd(), "the adapter closes the connection after disconnect")
        target.waitForDetach()
    }

    func testARequestItCannotServeIsRefusedByNameAndTheSessionGoesOn() throws {
        let target = RecordingTarget()
        let (listener, editor) = try connect(target)
        defer { listener.close() }

        let unknown = try editor.request("readMemory", ["memoryReference": "0"])
        XCTAssertEqual(unknown["success"]?.boolValue, false)
        XCTAssertEqual(unknown["command"]?.stringValue, "readMemory")
        XCTAssertTrue(unknown["message"]?.stringValue?.contains("readMemory is not supported") == true)
        XCTAssertEqual(
            unknown["body"]?["error"]?["format"], unknown["message"],
            "an ErrorResponse's body.error, as the schema has it")
        XCTAssertNotNil(unknown["body"]?["error"]?["id"]?.intValue)

        let noPath = try editor.request("setBreakpoints", ["source": ["name": "init.lua"]])
        XCTAssertEqual(noPath["success"]?.boolValue, false)
        XCTAssertTrue(noPath["message"]?.stringValue?.contains("source.path") == true)

        let badFilter = try editor.request("setExceptionBreakpoints", ["filters": LuaValue(["raised"])])
        XCTAssertEqual(badFilter["success"]?.boolValue, false)
        XCTAssertTrue(badFilter["message"]?.stringValue?.contains("the filters are: all, uncaught") == true)

        XCTAssertEqual(try editor.request("threads")["success"]?.boolValue, true, "the session still answers")
    }

    func testBrokenFramingEndsTheSessionAndTheTargetIsLetGo() throws {
        let target = RecordingTarget()
        let (listener, editor) = try connect(target)
        defer { listener.close() }
        try editor.write(Array("Content-Length: nope\r\n\r\n".utf8))
        XCTAssertNil(try editor.nextOrEnd())
        target.waitForDetach()
        XCTAssertTrue(target.logged.contains { $0.contains("Content-Length is not a length") }, "\(target.logged)")
    }

    func testAPortInUseIsNamedWithTheFix() throws {
        let first = try DAPListener(host: "127.0.0.1", port: 0)
        defer { first.close() }
        XCTAssertThrowsError(try DAPListener(host: "127.0.0.1", port: first.port)) { error in
            XCTAssertTrue("\(error)".contains("cannot listen on 127.0.0.1:\(first.port)"), "\(error)")
            XCTAssertTrue("\(error)".contains("pick another port"), "\(error)")
        }
    }

    // MARK: Helpers

    // MARK: A session over a relay (moonflow serve --debug)

    func testASessionOverAMailboxAnswersThroughItAndEndsWhenTheEditorGoes() throws {
        let target = RecordingTarget()
        final class Sent: @unchecked Sendable { let lock = NSLock(); var messages: [LuaValue] = [] }
        let sent = Sent()
        let mailbox = DAPMailbox { message in sent.lock.withLock { sent.messages.append(message) } }
        let ended = DispatchSemaphore(value: 0)
        Thread {
            DAPSession(connection: mailbox, target: target).run()
            ended.signal()
        }.start()
        mailbox.deliver(["type": "request", "seq": 1, "command": "initialize"])
        mailbox.deliver(["type": "request", "seq": 2, "command": "attach"])
        mailbox.deliver(["type": "request", "seq": 3, "command": "threads"])
        let give = Date().addingTimeInterval(30)
        while sent.lock.withLock({ sent.messages.count }) < 4, Date() < give { Thread.sleep(forTimeInterval: 0.005) }
        mailbox.close()
        XCTAssertEqual(ended.wait(timeout: .now() + 30), .success, "the session ended once the mailbox closed")
        target.waitForDetach()
        let commands = sent.lock.withLock {
            sent.messages.compactMap { $0["command"]?.stringValue ?? $0["event"]?.stringValue }
        }
        XCTAssertEqual(
            commands, ["initialize", "attach", "initialized", "threads"], "answered in order, through the mailbox")
        XCTAssertFalse(
            mailbox.deliver(["type": "request", "seq": 4, "command": "threads"]), "a closed mailbox takes nothing more")
    }

    func testASecondEditorIsTurnedAwayByNameWhileTheFirstIsAttached() throws {
        let server = try DebugServer(host: "127.0.0.1", port: 0, name: "counter") { _ in }
        defer { server.close() }
        let port = try XCTUnwrap(Int(server.address.split(separator: ":").last ?? ""))
        let first = try EditorClient(port: port)
        XCTAssertEqual(try first.request("initialize")["success"]?.boolValue, true)
        XCTAssertEqual(try first.attach(token: server.access.token)["success"]?.boolValue, true)

        let second = try EditorClient(port: port)
        XCTAssertEqual(try second.request("initialize")["success"]?.boolValue, true, "initialize is served to anyone")
        let refused = try second.attach(token: server.access.token)
        XCTAssertEqual(refused["success"]?.boolValue, false, "answered at once, not left waiting")
        XCTAssertEqual(
            refused["message"]?.stringValue,
            "another editor is attached to the debugger on \(server.address): one at a time; disconnect it, then attach again"
        )
        XCTAssertNil(try second.nextOrEnd(), "and the connection closed")
        XCTAssertEqual(try first.request("threads")["success"]?.boolValue, true, "the first goes on")

        XCTAssertEqual(try first.request("disconnect")["success"]?.boolValue, true)
        XCTAssertNil(try first.nextOrEnd())
        var answered = false
        for _ in 0..<100 where !answered {  // the first session's thread lets go of the slot as it ends
            let third = try EditorClient(port: port)
            _ = try third.request("initialize")
            answered = try third.attach(token: server.access.token)["success"]?.boolValue == true
            if !answered { Thread.sleep(forTimeInterval: 0.02) }
        }
        XCTAssertTrue(answered, "once the first went, another editor attaches")
    }

    private func connect(_ target: RecordingTarget) throws -> (DAPListener, EditorClient) {
        let listener = try DAPListener(host: "127.0.0.1", port: 0)
        listener.start { connection in
            DAPSession(connection: connection, target: target).run { target.log($0) }
        }
        return (listener, try EditorClient(port: listener.port))
    }
}

/// A target that records what the session asked of it: lines with code are 1–10 but
/// 4 (a blank line), so a breakpoint there moves to 5.
private final class RecordingTarget: DebugTarget, @unchecked Sendable {
    private let lock = NSLock()
    private var _breakpoints: [String: [BreakpointRequest]] = [:]
    private var _filters: Set<ExceptionFilter> = []
    private var _configured = false
    private var _logged: [String] = []
    private let detached = DispatchSemaphore(value: 0)

    var breakpoints: [String: [BreakpointRequest]] { lock.withLock { _breakpoints } }
    var filters: Set<ExceptionFilter> { lock.withLock { _filters } }
    var configured: Bool { lock.withLock { _configured } }
    var logged: [String] { lock.withLock { _logged } }

    func threads() -> [DebugThread] { [DebugThread(id: 1, name: "counter"), DebugThread(id: 2, name: "search")] }
    func setBreakpoints(path: String, _ requested: [BreakpointRequest]) -> [PlacedBreakpoint] {
        lock.withLock { _breakpoints[path] = requested }
        return requested.map { request in
            if request.line > 10 {
                return PlacedBreakpoint(line: nil, message: "no code at or after line \(request.line)")
            }
            return PlacedBreakpoint(line: request.line == 4 ? 5 : request.line)
        }
    }
    func setExceptionFilters(_ filters: Set<ExceptionFilter>) { lock.withLock { _filters = filters } }
    func configurationDone() { lock.withLock { _configured = true } }
    func detach() { detached.signal() }
    func stackTrace() -> Result<[LuaFrame], any Error>? { nil }
    func variables(_ reference: Int) -> Result<[LuaVariable], any Error>? { nil }
    func evaluate(_ expression: String, frame level: Int) -> Result<LuaVariable, any Error>? { nil }
    func resume(_ mode: LuaResume) -> Bool { false }
    func pause() {}
    func log(_ line: String) { lock.withLock { _logged.append(line) } }
    func waitForDetach() {
        XCTAssertEqual(detached.wait(timeout: .now() + 30), .success, "the session let the target go")
    }
}
