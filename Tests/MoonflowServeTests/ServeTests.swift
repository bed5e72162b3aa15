import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LuaKit
import MoonflowDebug
import PluginFixtures
import XCTest

/// `moonflow serve` and an app connected to it, both real processes on loopback: the built
/// `moonflow` (which becomes `moonflow-inspector serve`) and `moonflow-serve-testapp`, an app
/// that links MoonflowHost alone and prints what it sees.
final class ServeTests: XCTestCase {
    private var folder: URL!

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("moonflow-serve-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: folder.appendingPathComponent("counter"), withIntermediateDirectories: true)
        try write(counter(times: 1))
    }

    override func tearDown() { try? FileManager.default.removeItem(at: folder) }

    private func counter(times factor: Int, typo: Bool = false) -> String {
        """
        local mf = require "moonflow"
        return mf.feature {
          name = "counter",
          initial = { count = 0 },
          actions = { increment = { by = "integer?" } },
          mutations = { add = { n = "integer" } },
          handle = function(action) return { type = "add", n = action.by or 1 } end,
          reduce = function(state, m)\(typo ? " state.count = = 1" : "")
            state.count = state.count + m.n * \(factor)
            return state
          end,
        }
        """
    }

    private func write(_ text: String, to name: String = "counter/init.lua") throws {
        try Data(text.utf8).write(to: folder.appendingPathComponent(name))
    }

    /// `moonflow serve FOLDER --format jsonl ARGS`, once it printed where it serves.
    private func serve(_ arguments: [String] = []) throws -> (process: Child, url: String) {
        let server = try Child(Built.binary("moonflow"), ["serve", folder.path, "--format", "jsonl"] + arguments)
        let line = try server.waitFor(#""event":"serve""#)
        let url = try XCTUnwrap(try LuaValue(json: line)["url"]?.stringValue)
        return (server, url)
    }

    func testASaveReachesTheAppWithItsStateAndAMistakeShowsInBothPlacesWhileTheOldCodeRuns() throws {
        let (server, url) = try serve()
        defer { server.kill() }
        XCTAssertTrue(url.hasPrefix("http://127.0.0.1:"), url)
        XCTAssertNotNil(url.range(of: #"\?token=[0-9a-f]{32}$"#, options: .regularExpression), url)
        let app = try Child(Built.binary("moonflow-serve-testapp"), [url, "counter"])
        defer { app.kill() }
        try app.waitFor(#""kind":"state","value":{"count":0}"#)
        // The terminal shows the app's events as `moonflow run --format jsonl` prints them.
        try server.waitFor(#"{"event":"state","t":"#)
        app.send(#"{"type":"increment","by":3}"#)
        try app.waitFor(#""value":{"count":3}"#)
        try server.waitFor(#""state":{"count":3}"#)

        try write(counter(times: 10))
        try app.waitFor(#""kind":"reload""#)
        try server.waitFor(#"{"event":"reload""#)
        app.send(#"{"type":"increment"}"#)
        try app.waitFor(#""value":{"count":13}"#)  // kept 3, then the new reducer's 10

        try write(counter(times: 100, typo: true))
        try app.waitFor(#"{"app":"error""#)
        let error = try server.waitFor(#"{"event":"error""#)
        XCTAssertTrue(error.contains("init.lua:8"), error)
        app.send(#"{"type":"increment"}"#)
        try app.waitFor(#""value":{"count":23}"#)  // still the old code
        XCTAssertEqual(app.lines.filter { $0.contains(#""kind":"reload""#) }.count, 1)
    }

    func testAnEditorAttachedToServeStopsTheAppsFeatureAtABreakpoint() throws {
        let (server, url) = try serve(["--debug", "127.0.0.1:0"])
        defer { server.kill() }
        let announced = try server.waitFor(#""event":"debugger""#)
        let address = try XCTUnwrap(try LuaValue(json: announced)["address"]?.stringValue)
        let token = try XCTUnwrap(
            try LuaValue(json: announced)["token"]?.stringValue, "the token editors give, beside the address")
        let port = try XCTUnwrap(address.split(separator: ":").last.flatMap { Int($0) })
        let app = try Child(Built.binary("moonflow-serve-testapp"), [url, "counter"])
        defer { app.kill() }
        try app.waitFor(#""kind":"state","value":{"count":0}"#)

        // Another process that reaches the port, without the token: refused, closed, and the app hears nothing.
        let intruder = try DAPConnection.connect(host: "127.0.0.1", port: port, timeout: 30)
        try intruder.send([
            "type": "request", "seq": 1, "command": "evaluate", "arguments": ["expression": "os.exit()"],
        ])
        let refusal = try XCTUnwrap(try intruder.receive())
        XCTAssertEqual(refusal["success"]?.boolValue, false)
        XCTAssertTrue(refusal["message"]?.stringValue?.contains("evaluate before attach") == true, "\(refusal)")
        XCTAssertNil(try intruder.receive(), "and closed")
        intruder.close()

        let editor = try DAPConnection.connect(host: "127.0.0.1", port: port, timeout: 30)
        defer { editor.close() }
        var seq = 0
        var events: [LuaValue] = []
        func request(_ command: String, _ arguments: LuaValue = LuaValue([String: LuaValue]())) throws -> LuaValue {
            seq += 1
            try editor.send([
                "type": "request", "seq": LuaValue(seq), "command": LuaValue(command), "arguments": arguments,
            ])
            while let message = try editor.receive() {
                if message["type"]?.stringValue == "response" { return message }
                events.append(message)
            }
            throw Failure("no answer to \(command) in 30 s, or the debugger closed the connection")
        }
        func event(_ name: String) throws -> LuaValue {
            while true {
                let message = events.isEmpty ? try editor.receive() : events.removeFirst()
                guard let message else {
                    throw Failure("no \(name) event in 30 s, or the debugger closed the connection")
                }
                if message["event"]?.stringValue == name { return message }
            }
        }
        XCTAssertEqual(try request("initialize")["success"]?.boolValue, true)
        _ = try request("attach", ["token": LuaValue(token)])
        // The editor names the file as it is here; the app has it from the server.
        let file = folder.appendingPathComponent("counter/init.lua").standardizedFileURL.path
        XCTAssertEqual(
            try request("setBreakpoints", ["source": ["path": LuaValue(file)], "breakpoints": [["line": 9]]])[
                "success"]?.boolValue, true)
        _ = try request("configurationDone")

        app.send(#"{"type":"increment","by":3}"#)
        XCTAssertEqual(try event("stopped")["body"]?["reason"]?.stringValue, "breakpoint")
        let top = try request("stackTrace", ["threadId": 1])["body"]?["stackFrames"]?[0]
        XCTAssertEqual(top?["name"]?.stringValue, "reduce")
        XCTAssertEqual(top?["line"]?.intValue, 9)
        XCTAssertEqual(top?["source"]?["path"]?.stringValue, file, "the editor's own path for the served file")
        XCTAssertEqual(
            try request("evaluate", ["expression": "state.count + m.n", "frameId": 1])["body"]?["result"]?.stringValue,
            "3")
        _ = try request("continue", ["threadId": 1])
        try app.waitFor(#""value":{"count":3}"#)

        // The editor goes: its breakpoints go with it.
        editor.close()
        app.send(#"{"type":"increment"}"#)
        try app.waitFor(#""value":{"count":4}"#)
    }

    func testTheAppKeepsRunningWithoutTheServerAndConnectsAgainWhenItIsBack() throws {
        var (server, url) = try serve()
        let app = try Child(Built.binary("moonflow-serve-testapp"), [url, "counter"])
        defer { app.kill() }
        try app.waitFor(#""value":{"count":0}"#)
        try expectLink(of: app, connected: true)
        server.kill()
        server.waitUntilExit()
        app.send(#"{"type":"increment"}"#)
        try app.waitFor(#""value":{"count":1}"#)
        try expectLink(of: app, connected: false)

        let address = try XCTUnwrap(URLComponents(string: url))
        let token = try XCTUnwrap(address.queryItems?.first?.value)
        (server, _) = try serve(["--port", String(try XCTUnwrap(address.port)), "--token", token])
        defer { server.kill() }
        try server.waitFor("connected")
        try write(counter(times: 5))
        try app.waitFor(#""kind":"reload""#)
        try expectLink(of: app, connected: true)
        app.send(#"{"type":"increment"}"#)
        try app.waitFor(#""value":{"count":6}"#)
    }

    /// Asks the app (`:link`, which reads `DevServerLink.isConnected`) until it answers
    /// `connected` (a link notices a closed server when its socket says so), for up to 30 s.
    private func expectLink(of app: Child, connected: Bool) throws {
        let deadline = Date().addingTimeInterval(30)
        while true {
            let asked = app.lines.filter { $0.contains(#""app":"link""#) }.count
            app.send(":link")
            while app.lines.filter({ $0.contains(#""app":"link""#) }).count == asked {
                guard Date() < deadline else { return XCTFail("the app never answered :link") }
                Thread.sleep(forTimeInterval: 0.01)
            }
            if app.lines.last(where: { $0.contains(#""app":"link""#) })?.contains("\"connected\":\(connected)") == true
            {
                return
            }
            guard Date() < deadline else { return XCTFail("the link never said connected: \(connected)") }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    func testTheInspectorSeesTheAppAndItsDispatchChangesTheAppsStateAndTheRecordingReplays() async throws {
        let recording = folder.appendingPathComponent("session.jsonl").path
        let (server, url) = try serve(["--record", recording])
        defer { server.kill() }
        let app = try Child(Built.binary("moonflow-serve-testapp"), [url, "counter"])
        defer { app.kill() }
        let announced = try server.waitFor(#"{"event":"inspector""#)
        XCTAssertTrue(announced.contains(#""feature":"counter""#), announced)
        let page = try XCTUnwrap(try LuaValue(json: announced)["url"]?.stringValue)
        app.send(#"{"type":"increment","by":2}"#)
        try app.waitFor(#""value":{"count":2}"#)

        let ws = page.replacingOccurrences(of: "http://", with: "ws://").replacingOccurrences(
            of: "/?token=", with: "/ws?token=")
        let inspector = try await Page.open(ws)
        defer { inspector.close() }
        let frames = try await inspector.frames(count: 5)  // session, state 0, action, mutation, state
        XCTAssertEqual(frames[0]["event"], "session")
        XCTAssertEqual(frames[0]["feature"], "counter")
        XCTAssertEqual(frames[4]["event"], "state")
        try await inspector.send(#"{"cmd":"dispatch","action":{"type":"increment","by":5}}"#)
        try app.waitFor(#""value":{"count":7}"#)
        app.send(#"{"type":"increment"}"#)
        try app.waitFor(#""value":{"count":8}"#)
        try server.waitFor(#""state":{"count":8}"#)
        // The recording holds what the app did, the inspector's action included.
        let recorded = try String(contentsOfFile: recording, encoding: .utf8)
        XCTAssertTrue(recorded.contains(#"{"input":{"by":5,"type":"increment"}"#), recorded)

        let replay = try Child(Built.binary("moonflow"), ["replay", recording])
        replay.waitUntilExit()
        XCTAssertEqual(replay.status, 0, replay.lines.joined(separator: "\n"))
    }

    func testAServerReachableFromTheNetworkSaysSoAndUsageErrorsExit2() throws {
        let (open, url) = try serve(["--host", "0.0.0.0"])
        defer { open.kill() }
        XCTAssertFalse(url.hasPrefix("http://0.0.0.0:"), "a URL a device can open: \(url)")
        XCTAssertTrue(
            open.errors.contains("moonflow: warning: --host 0.0.0.0 is reachable from the network"), open.errors)
        for (arguments, message) in [
            (["serve", "/no/such/folder"], "/no/such/folder is not a folder"),
            (["serve", folder.path, "--token", "guess"], "--token must be 32 hex digits"),
            (["serve", folder.appendingPathComponent("counter/init.lua").path], "is not a folder"),
        ] {
            let run = try Child(Built.binary("moonflow"), arguments)
            run.waitUntilExit()
            XCTAssertEqual(run.status, 2, arguments.joined(separator: " "))
            XCTAssertTrue(run.errors.contains(message), run.errors)
        }
    }

    /// An app's name (its process name) and a feature's `name` come from outside: in the
    /// pretty format they reach the terminal escaped, as event data does (before: a name
    /// could clear the screen, set colours or the window title, or break a line).
    func testNamesFromAnAppAreEscapedBeforeTheTerminal() throws {
        try write(
            counter(times: 1).replacingOccurrences(of: "name = \"counter\"", with: #"name = "c\27[2J\27]0;owned\7\nx""#)
        )
        let server = try Child(Built.binary("moonflow"), ["serve", folder.path])
        defer { server.kill() }
        let line = try server.waitFor("?token=")
        let url = try XCTUnwrap(
            line.range(of: #"http://[^ ]+token=[0-9a-f]+"#, options: .regularExpression).map { String(line[$0]) })
        // The app runs as a copy whose file name holds an escape sequence: its process name.
        let hostile = folder.appendingPathComponent("app\u{1B}[31m")
        try FileManager.default.copyItem(at: try Built.binary("moonflow-serve-testapp"), to: hostile)
        let app = try Child(hostile, [url, "counter"])
        defer { app.kill() }
        try server.waitFor("inspector for")
        let shown = server.lines.joined(separator: "\n")
        XCTAssertFalse(shown.contains("\u{1B}"), "no raw escape reaches the terminal: \(shown.debugDescription)")
        XCTAssertFalse(shown.contains("\u{07}"), shown.debugDescription)
        XCTAssertTrue(shown.contains(#"app\027[31m"#), shown)
        XCTAssertTrue(shown.contains(#"c\027[2J\027]0;owned\007\nx"#), shown)
    }

    func testWhatTheServerRefuses() throws {
        let secret = folder.appendingPathComponent("secret.lua")
        try write("return 'secret'", to: "secret.lua")
        try FileManager.default.createSymbolicLink(
            at: folder.appendingPathComponent("counter/link.lua"), withDestinationURL: secret)
        let (server, url) = try serve()
        defer { server.kill() }
        let address = try XCTUnwrap(URLComponents(string: url))
        let port = try XCTUnwrap(address.port), token = try XCTUnwrap(address.queryItems?.first?.value)
        let wrong = String(token.reversed())
        func get(_ path: String) throws -> (status: Int, body: String) {
            try RawHTTP.send(["GET \(path) HTTP/1.1", "Host: 127.0.0.1:\(port)", "Connection: close"], port: port)
        }
        let served = try get("/files/counter/init.lua?token=\(token)")
        XCTAssertEqual(served.status, 200)
        XCTAssertTrue(served.body.contains("mf.feature"), served.body)
        XCTAssertEqual(try get("/files/counter/init.lua?token=\(wrong)").status, 403)
        for path in ["/files/counter/../secret.lua", "/files/counter/%2e%2e/secret.lua", "/files/counter/link.lua"] {
            let refused = try get("\(path)?token=\(token)")
            XCTAssertEqual(refused.status, 403, "\(path): \(refused.body)")
            XCTAssertFalse(refused.body.contains("'secret'"), path)
        }
        XCTAssertTrue(try get("/files/counter/link.lua?token=\(token)").body.contains("outside the folder"))
        // A NUL (or any control byte) before `.lua` once made the file system open notes.txt.
        try write("a note that is not served", to: "counter/notes.txt")
        for path in [
            "/files/counter/notes.txt%00.lua", "/files/counter/notes.txt%0a.lua", "/files/counter/init.lua%00x.lua",
            "/files/counter/%ff.lua",
        ] {
            let refused = try get("\(path)?token=\(token)")
            XCTAssertEqual(refused.status, 403, "\(path): \(refused.body)")
            XCTAssertFalse(refused.body.contains("not served\n") && refused.body.contains("a note"), path)
            XCTAssertFalse(refused.body.contains("a note that is not served"), path)
        }

        func upgrade(token: String, origin: String?) throws -> (status: Int, body: String) {
            var head = [
                "GET /app?token=\(token) HTTP/1.1", "Host: 127.0.0.1:\(port)", "Upgrade: websocket",
                "Connection: Upgrade",
                "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13",
            ]
            if let origin { head.append("Origin: \(origin)") }
            return try RawHTTP.send(head, port: port)
        }
        XCTAssertEqual(try upgrade(token: wrong, origin: nil).status, 403)
        XCTAssertEqual(try upgrade(token: token, origin: "http://evil.example").status, 403)
        // An app with a wrong token is told why, at once.
        let app = try Child(
            Built.binary("moonflow-serve-testapp"), ["http://127.0.0.1:\(port)/?token=\(wrong)", "counter"])
        app.waitUntilExit()
        XCTAssertEqual(app.status, 1)
        XCTAssertTrue(app.errors.contains("403"), app.errors)
    }
}

/// Binaries built beside this test bundle.
enum Built {
    static func binary(_ name: String) throws -> URL {
        var folders: [URL] = []
        if let first = ProcessInfo.processInfo.arguments.first {
            folders.append(URL(fileURLWithPath: first).resolvingSymlinksInPath().deletingLastPathComponent())
        }
        for bundle in [Bundle(for: ServeTests.self), Bundle.main] {
            var url = bundle.bundleURL
            while url.pathComponents.count > 1 {
                if url.pathExtension == "xctest" { folders.append(url.deletingLastPathComponent()); break }
                url.deleteLastPathComponent()
            }
        }
        for folder in folders
        where FileManager.default.isExecutableFile(atPath: folder.appendingPathComponent(name).path) {
            return folder.appendingPathComponent(name)
        }
        throw Failure(
            "\(name) is not built beside the tests (looked in \(folders.map(\.path))); build with swift build --build-tests"
        )
    }
}

/// A process whose output lines are read as they come.
final class Child: @unchecked Sendable {
    private let process = Process()
    private let input = Pipe(), output = Pipe(), errorPipe = Pipe()
    private let lock = NSLock()
    private var buffer = "", errorText = ""
    private var _lines: [String] = []
    private var ended = false, errorsEnded = false

    /// - Parameters:
    ///   - environment: variables set for the process on top of this one's.
    ///   - directory: its working folder (this one's by default).
    init(_ executable: URL, _ arguments: [String], environment: [String: String] = [:], directory: URL? = nil) throws {
        process.executableURL = executable
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        if let directory { process.currentDirectoryURL = directory }
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errorPipe
        output.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            guard let self else { return }
            guard !data.isEmpty else {
                handle.readabilityHandler = nil
                self.lock.withLock { self.ended = true }
                return
            }
            self.lock.withLock {
                self.buffer += String(decoding: data, as: UTF8.self)
                while let newline = self.buffer.firstIndex(of: "\n") {
                    self._lines.append(String(self.buffer[..<newline]))
                    self.buffer.removeSubrange(...newline)
                }
            }
        }
        errorPipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            guard let self else { return }
            guard !data.isEmpty else {
                handle.readabilityHandler = nil
                self.lock.withLock { self.errorsEnded = true }
                return
            }
            self.lock.withLock { self.errorText += String(decoding: data, as: UTF8.self) }
        }
        try process.run()
    }

    var lines: [String] { lock.withLock { _lines + (buffer.isEmpty ? [] : [buffer]) } }
    var errors: String { lock.withLock { errorText } }
    var status: Int32 { process.terminationStatus }
    var pid: Int32 { process.processIdentifier }
    var isRunning: Bool { process.isRunning }

    func send(_ line: String) { input.fileHandleForWriting.write(Data((line + "\n").utf8)) }

    /// The first line containing `text`, waiting for it (generously: a loaded machine, sanitizers).
    @discardableResult
    func waitFor(_ text: String, timeout: TimeInterval = 30) throws -> String {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let line = lines.first(where: { $0.contains(text) }) { return line }
            Thread.sleep(forTimeInterval: 0.01)
        }
        throw Failure(
            "no line with \(text) within \(Int(timeout)) s; output so far:\n\(lines.joined(separator: "\n"))\nstandard error:\n\(errors)"
        )
    }

    /// Waits for the process to end and its output to be read to the end.
    func waitUntilExit() {
        process.waitUntilExit()
        let deadline = Date().addingTimeInterval(10)
        while !lock.withLock({ ended && errorsEnded }) && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
    }

    func kill() { if process.isRunning { process.terminate() } }
}
