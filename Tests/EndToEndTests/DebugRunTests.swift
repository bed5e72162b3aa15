import Foundation
import XCTest

/// `moonflow run --debug` as a user starts it, with an editor attached over a real socket:
/// the binary, its standard input as the action source, and a DAP client written here.
final class DebugRunTests: XCTestCase {
    /// `moonflow ARGS` started in `folder` (the package root), once it said where its debugger
    /// listens; with `fileLimit`, under `ulimit -n` of that many descriptors.
    private func started(
        _ arguments: [String], in folder: URL = Moonflow.root,
        fileLimit: Int? = nil
    ) throws -> (Process, Pipe, Pipe, DAPClient) {
        let process = Process()
        if let fileLimit {
            process.executableURL = URL(fileURLWithPath: "/bin/bash")
            process.arguments =
                ["-c", "ulimit -n \(fileLimit) && exec \"$0\" \"$@\"", try Moonflow.binary().path] + arguments
        } else {
            process.executableURL = try Moonflow.binary()
            process.arguments = arguments
        }
        process.currentDirectoryURL = folder
        let input = Pipe(), output = Pipe(), errors = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        // The first line on standard error names the port it got.
        var announced = Data()
        while !announced.contains(UInt8(ascii: "\n")) {
            let more = errors.fileHandleForReading.availableData
            guard !more.isEmpty else { break }
            announced.append(more)
        }
        let line = String(decoding: announced, as: UTF8.self)
        XCTAssertTrue(line.hasPrefix("moonflow: debugger listening on 127.0.0.1:"), line)
        XCTAssertTrue(line.contains("waiting for the editor to attach"), line)
        let port = try XCTUnwrap(
            line.split(separator: ":").dropFirst(2).first.flatMap { Int($0.prefix { $0.isNumber }) })
        // The token is printed beside the address, and kept in a file for the user alone.
        let token = try XCTUnwrap(line.firstMatch(of: /with token ([0-9a-f]{32}) \(in ([^)]+)\)/), line)
        XCTAssertEqual(try String(contentsOfFile: String(token.2), encoding: .utf8), token.1 + "\n")
        return (process, input, output, try DAPClient(port: port, token: String(token.1)))
    }

    /// What the command printed, once it ended, and its exit status.
    private func ended(_ process: Process, _ output: Pipe) -> (printed: String, status: Int32) {
        let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (printed, process.terminationStatus)
    }

    private func frames(_ editor: DAPClient) throws -> [[String: Any]] {
        let trace = try editor.request("stackTrace", ["threadId": 1])
        return ((trace["body"] as? [String: Any])?["stackFrames"] as? [[String: Any]]) ?? []
    }

    /// A run whose descriptors are few: idle connections neither keep the editor out nor
    /// take the descriptors the run needs to open its plugin (the waiting ones are capped
    /// by the limit, and the accept loop goes on after EMFILE).
    func testTheEditorAttachesAfterIdleConnectionsUseUpTheDescriptors() throws {
        // An AddressSanitizer binary needs descriptors of its own (its leak check at exit):
        // twelve starve the sanitizer, not the debugger. scripts/test's release phase checks it.
        if try Moonflow.isAddressSanitized() {
            throw XCTSkip("ulimit -n 12 leaves an AddressSanitizer binary too few descriptors of its own")
        }
        let (process, input, output, first) = try started(
            [
                "run", "plugins/counter", "--debug", "127.0.0.1:0", "--debug-wait", "--actions", "-", "--format",
                "jsonl",
            ],
            fileLimit: 12)
        defer { if process.isRunning { process.terminate() } }
        let idle = try (0..<30).map { _ in try DAPClient(port: first.port, token: "") }
        // Time for the listener to take all it will: the run then opens its plugin with
        // those connections held (before, they took every descriptor, and it could not).
        Thread.sleep(forTimeInterval: 0.5)
        let editor = try DAPClient(port: first.port, token: first.token)
        XCTAssertEqual(try editor.request("initialize")["success"] as? Bool, true)
        XCTAssertEqual(try editor.request("attach", ["token": editor.token])["success"] as? Bool, true)
        _ = try editor.request("configurationDone")
        input.fileHandleForWriting.write(Data("{\"type\":\"increment\",\"by\":3}\n".utf8))
        input.fileHandleForWriting.closeFile()
        let (printed, status) = ended(process, output)
        XCTAssertEqual(status, 0, printed)
        XCTAssertTrue(printed.contains(#""state":{"count":3}"#), printed)
        withExtendedLifetime(idle) {}
    }

    /// Every form of the plugin's path stops at the editor's breakpoint, which names the file
    /// absolutely: a path with `..` steps (`moonflow run ../../counter`) matched none before.
    func testAnEditorStopsARunAtABreakpointReadsItAndTheRunGoesOnAfterDisconnect() throws {
        for (folder, plugin) in [
            ("", "plugins/counter"), ("plugins/counter/spec", "../../counter"),
            ("plugins", "./counter/../counter"),
        ] {
            try stopsAtABreakpoint(in: Moonflow.root.appendingPathComponent(folder), plugin)
        }
    }

    private func stopsAtABreakpoint(in folder: URL, _ plugin: String) throws {
        let (process, input, output, editor) = try started(
            ["run", plugin, "--debug", "127.0.0.1:0", "--debug-wait", "--actions", "-", "--format", "jsonl"], in: folder
        )
        defer { if process.isRunning { process.terminate() } }
        XCTAssertEqual(try editor.request("initialize")["success"] as? Bool, true)
        _ = try editor.request("attach", ["token": editor.token])
        let file = Moonflow.root.appendingPathComponent("plugins/counter/init.lua").path
        let placed = try editor.request("setBreakpoints", ["source": ["path": file], "breakpoints": [["line": 44]]])
        XCTAssertEqual(
            ((placed["body"] as? [String: Any])?["breakpoints"] as? [[String: Any]])?.first?["line"] as? Int, 44)
        _ = try editor.request("configurationDone")

        input.fileHandleForWriting.write(Data("{\"type\":\"increment\",\"by\":3}\n".utf8))
        let stopped = try editor.event("stopped")
        XCTAssertEqual((stopped["body"] as? [String: Any])?["reason"] as? String, "breakpoint", plugin)
        let top = try XCTUnwrap(try frames(editor).first)
        XCTAssertEqual(top["name"] as? String, "reduce", plugin)
        XCTAssertEqual(top["line"] as? Int, 44, plugin)
        XCTAssertEqual(
            (top["source"] as? [String: Any])?["path"] as? String, file, "the path an editor opens: \(plugin)")
        let sum = try editor.request("evaluate", ["expression": "state.count + m.n", "frameId": 1])
        XCTAssertEqual((sum["body"] as? [String: Any])?["result"] as? String, "3", plugin)

        _ = try editor.request("disconnect")
        input.fileHandleForWriting.write(Data("{\"type\":\"increment\"}\n".utf8))
        try input.fileHandleForWriting.close()
        let (printed, status) = ended(process, output)
        XCTAssertEqual(status, 0, plugin)
        XCTAssertTrue(
            printed.contains("\"state\":{\"count\":4}"),
            "both actions ran, the second past no breakpoint (\(plugin)):\n\(printed)")
    }
}

extension DebugRunTests {
    func testSpecsStopInTheSpecAndInThePluginUnderMoonflowTestDebug() throws {
        let (process, _, output, editor) = try started(
            [
                "test", "plugins/counter/spec/counter_spec.lua", "--debug", "127.0.0.1:0", "--debug-wait", "--filter",
                "increments by one",
            ])
        defer { if process.isRunning { process.terminate() } }
        _ = try editor.request("initialize")
        _ = try editor.request("attach", ["token": editor.token])
        let spec = Moonflow.root.appendingPathComponent("plugins/counter/spec/counter_spec.lua").path
        let plugin = Moonflow.root.appendingPathComponent("plugins/counter/init.lua").path
        _ = try editor.request("setBreakpoints", ["source": ["path": spec], "breakpoints": [["line": 10]]])
        _ = try editor.request("setBreakpoints", ["source": ["path": plugin], "breakpoints": [["line": 44]]])
        _ = try editor.request("configurationDone")

        _ = try editor.event("stopped")
        let inSpec = try XCTUnwrap(try frames(editor).first)
        XCTAssertEqual((inSpec["source"] as? [String: Any])?["path"] as? String, spec)
        XCTAssertEqual(inSpec["line"] as? Int, 10)
        _ = try editor.request("continue", ["threadId": 1])

        _ = try editor.event("stopped")
        let stack = try frames(editor)
        XCTAssertEqual(stack.first?["name"] as? String, "reduce")
        XCTAssertEqual(stack.first?["line"] as? Int, 44)
        XCTAssertTrue(
            stack.contains { ($0["source"] as? [String: Any])?["path"] as? String == spec && $0["line"] as? Int == 10 },
            "the spec's line that sent the action is on the stack: \(stack)")
        _ = try editor.request("disconnect")
        let (printed, status) = ended(process, output)
        XCTAssertEqual(status, 0, printed)
        XCTAssertTrue(printed.contains(" passed, 0 failed"), printed)
    }
}

extension DebugRunTests {
    /// A spec that fails an assertion, and one that expects errors (luassert's `has_error`, its
    /// own `pcall`), under the `uncaught` filter.
    func testAFailingAssertionStopsAtTheSpecsLineAndAnExpectedErrorDoesNot() throws {
        let folder = try ScratchFolder()
        try folder.write(
            "plugins/p/init.lua",
            """
            local mf = require "moonflow"
            return mf.feature { name = "p", initial = { n = 0 }, state = { n = "integer" },
              actions = { add = {} }, mutations = { added = {} },
              handle = function() return { type = "added" } end,
              reduce = function(s) s.n = s.n + 1; return s end }
            """)
        try folder.write(
            "plugins/p/spec/p_spec.lua",
            """
            local T = require "moonflow.test"
            describe("p", function()
              it("expects errors", function()
                assert.has_error(function() error("expected") end)
                assert.is_false(pcall(error, "also expected"))
              end)
              it("adds", function()
                local store = T.store("p")
                store:send({ type = "add" }, function(s) s.n = 1 end)
                assert.equal(2, store.state.n)
              end)
            end)
            """)
        let spec = folder.url.appendingPathComponent("plugins/p/spec/p_spec.lua").path
        let (process, _, output, editor) = try started(
            ["test", "--debug", "127.0.0.1:0", "--debug-wait"], in: folder.url)
        defer { if process.isRunning { process.terminate() } }
        _ = try editor.request("initialize")
        _ = try editor.request("attach", ["token": editor.token])
        _ = try editor.request("setExceptionBreakpoints", ["filters": ["uncaught"]])
        _ = try editor.request("configurationDone")

        let stopped = try editor.event("stopped")
        let body = stopped["body"] as? [String: Any]
        XCTAssertEqual(body?["reason"] as? String, "exception")
        XCTAssertTrue((body?["description"] as? String)?.contains("Expected objects to be equal") == true, "\(stopped)")
        let stack = try frames(editor)
        XCTAssertEqual(
            (stack.first?["source"] as? [String: Any])?["path"] as? String, spec, "the first stop is the failure")
        XCTAssertEqual(stack.first?["line"] as? Int, 10)
        XCTAssertFalse(
            stack.contains { (($0["source"] as? [String: Any])?["path"] as? String)?.contains("/share/lua/") == true },
            "busted's and luassert's frames are hidden: \(stack)")
        _ = try editor.request("disconnect")
        let (printed, status) = ended(process, output)
        XCTAssertEqual(status, 1, printed)
        XCTAssertTrue(printed.contains("1 passed, 1 failed"), printed)
    }
}

/// An editor's end of the Debug Adapter Protocol: requests in order, each `Content-Length`
/// framed, over a TCP socket to 127.0.0.1.
final class DAPClient {
    private let fd: Int32
    private var buffer = [UInt8]()
    private var events: [[String: Any]] = []
    private var seq = 0
    /// The debugger's token, as the command printed it.
    let token: String

    let port: Int

    init(port: Int, token: String) throws {
        self.token = token
        self.port = port
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard status == 0 else { throw Failure("connect to 127.0.0.1:\(port) failed") }
        var wait = timeval(tv_sec: 60, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    func request(_ command: String, _ arguments: [String: Any] = [:]) throws -> [String: Any] {
        seq += 1
        let body = try JSONSerialization.data(withJSONObject: [
            "type": "request", "seq": seq, "command": command, "arguments": arguments,
        ])
        let framed = Array("Content-Length: \(body.count)\r\n\r\n".utf8) + Array(body)
        guard framed.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == framed.count else {
            throw Failure("short write")
        }
        while true {
            let message = try receive()
            if message["type"] as? String == "response" { return message }
            events.append(message)
        }
    }

    func event(_ name: String) throws -> [String: Any] {
        while true {
            let message = events.isEmpty ? try receive() : events.removeFirst()
            if message["event"] as? String == name { return message }
        }
    }

    private func receive() throws -> [String: Any] {
        while true {
            if let end = buffer.firstRange(of: Array("\r\n\r\n".utf8)) {
                let header = String(decoding: buffer[..<end.lowerBound], as: UTF8.self)
                guard
                    let length = header.split(separator: ":").last.flatMap({
                        Int($0.trimmingCharacters(in: .whitespaces))
                    })
                else {
                    throw Failure("a header without a length: \(header)")
                }
                if buffer.count >= end.upperBound + length {
                    let body = Data(buffer[end.upperBound..<(end.upperBound + length)])
                    buffer.removeFirst(end.upperBound + length)
                    return try JSONSerialization.jsonObject(with: body) as? [String: Any] ?? [:]
                }
            }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 && errno == EINTR { continue }  // a signal (a child process ended) is not the end
            guard n > 0 else { throw Failure(n == 0 ? "the debugger closed the connection" : "no answer in 60 s") }
            buffer += chunk[..<n]
        }
    }
}
