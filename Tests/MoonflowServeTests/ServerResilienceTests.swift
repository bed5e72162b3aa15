import Foundation
import LuaKit
import PluginFixtures
import XCTest

/// The servers of `moonflow serve` and `run --inspect` through the built binaries: they keep
/// answering while pages wait on a run or an app that does not answer, forget apps that
/// restarted, take a device on the network, and hand an app the server's copy of a plugin.
final class ServerResilienceTests: XCTestCase {
    private var folder: URL!

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "moonflow-serve-resilience-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: folder.appendingPathComponent("counter"), withIntermediateDirectories: true)
        try write(
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "counter",
              initial = { count = 0 },
              actions = { increment = { by = "integer?" } },
              mutations = { add = { n = "integer" } },
              handle = function(action) return { type = "add", n = action.by or 1 } end,
              reduce = function(state, m) state.count = state.count + m.n return state end,
            }
            """, to: "counter/init.lua")
    }

    override func tearDown() { try? FileManager.default.removeItem(at: folder) }

    private func write(_ text: String, to name: String) throws {
        let url = folder.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: url)
    }

    /// How many connections must wait to take every thread of Swift concurrency's pool
    /// (one per core), and one more.
    private var enoughPages: Int { max(2, ProcessInfo.processInfo.activeProcessorCount) + 1 }

    private func ws(_ page: String) -> String {
        page.replacingOccurrences(of: "http://", with: "ws://").replacingOccurrences(of: "/?token=", with: "/ws?token=")
    }

    /// The reply of `cmd` a page got, waiting for it.
    private func reply(_ page: Page, _ cmd: String, after count: Int = 0) async throws -> LuaValue {
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if let found = page.all.dropFirst(count).first(where: {
                $0["event"] == "reply" && $0["cmd"]?.stringValue == cmd
            }) {
                return found
            }
            try await Task.sleep(nanoseconds: 5_000_000)
        }
        throw Failure("no reply to \(cmd) within 30 s: \(page.all)")
    }

    private func get(_ url: String) throws -> (status: Int, body: String) {
        let address = try XCTUnwrap(URLComponents(string: url))
        let port = try XCTUnwrap(address.port)
        let path = address.path.isEmpty ? "/" : address.path
        return try RawHTTP.send(
            [
                "GET \(path)?\(address.query ?? "") HTTP/1.1", "Host: \(address.host ?? "127.0.0.1"):\(port)",
                "Connection: close",
            ],
            port: port, host: address.host ?? "127.0.0.1")
    }

    /// A page's `dispatch` waited for the run's answer on the connection's thread, one
    /// of Swift concurrency's few: pages dispatching while the run did not answer froze every
    /// request and new page. Here `moonflow run --inspect` is stopped (SIGSTOP) while more pages
    /// than the pool has threads dispatch: each still answers its next frame, the page itself
    /// is served and a new page connects; once the run goes on, every dispatch is done.
    func testPagesDispatchingWhileTheRunDoesNotAnswerLeaveTheInspectorAnswering() async throws {
        let run = try Child(
            Built.binary("moonflow"),
            ["run", folder.appendingPathComponent("counter").path, "--inspect", "--format", "jsonl", "--actions", "-"],
            environment: ["LIBDISPATCH_COOPERATIVE_POOL_STRICT": "1"])
        defer { kill(run.pid, SIGCONT); run.kill() }
        let line = try run.waitFor(#""event":"inspector""#)
        let url = try XCTUnwrap(try LuaValue(json: line)["url"]?.stringValue)
        try run.waitFor(#""state":{"count":0}"#)
        var pages: [Page] = []
        for _ in 0..<enoughPages {
            let page = try await Page.open(ws(url))
            pages.append(page)
            _ = try await page.frames(count: 2)
        }
        defer { for page in pages { page.close() } }

        kill(run.pid, SIGSTOP)
        for page in pages {
            try await page.send(#"{"cmd":"dispatch","action":{"type":"increment"}}"#)
            try await page.send(#"{"cmd":"nope"}"#)
        }
        for page in pages {
            let refused = try await reply(page, "nope")
            XCTAssertEqual(refused["ok"], false)
        }
        XCTAssertEqual(try get(url).status, 200, "the page is served while the run does not answer")
        let late = try await Page.open(ws(url))
        defer { late.close() }
        let session = try await late.frames(count: 1)[0]
        XCTAssertEqual(session["event"], "session")

        kill(run.pid, SIGCONT)
        for page in pages {
            let done = try await reply(page, "dispatch")
            XCTAssertEqual(done["ok"], true, "\(done)")
        }
        try run.waitFor(#""state":{"count":\#(pages.count)}"#)
    }

    /// The same in `moonflow serve`: an app's feature starting made its inspector's server while
    /// the dev server's lock was held, waiting on a semaphore for Swift concurrency's threads,
    /// which the other apps' connections held waiting for that lock; and a page's dispatch to an
    /// app waited on the connection's thread for the app's answer, which comes on another. Here
    /// one app is stopped while more pages than the pool has threads dispatch to it, and two
    /// more apps start at once: they get their pages, and once the first goes on, every
    /// dispatch reaches it.
    func testAppsStartingAndPagesDispatchingWhileAnAppDoesNotAnswerLeaveServeAnswering() async throws {
        let server = try Child(
            Built.binary("moonflow"), ["serve", folder.path, "--format", "jsonl"],
            environment: ["LIBDISPATCH_COOPERATIVE_POOL_STRICT": "1"])
        defer { server.kill() }
        let served = try server.waitFor(#""event":"serve""#)
        let url = try XCTUnwrap(try LuaValue(json: served)["url"]?.stringValue)
        let first = try Child(Built.binary("moonflow-serve-testapp"), [url, "counter"])
        defer { kill(first.pid, SIGCONT); first.kill() }
        let announced = try server.waitFor(#""event":"inspector""#)
        let page = try XCTUnwrap(try LuaValue(json: announced)["url"]?.stringValue)
        try first.waitFor(#""value":{"count":0}"#)
        var pages: [Page] = []
        for _ in 0..<enoughPages {
            let p = try await Page.open(ws(page))
            pages.append(p)
            _ = try await p.frames(count: 2)
        }
        defer { for p in pages { p.close() } }

        kill(first.pid, SIGSTOP)
        for p in pages {
            try await p.send(#"{"cmd":"dispatch","action":{"type":"increment"}}"#)
            try await p.send(#"{"cmd":"nope"}"#)
        }
        for p in pages { _ = try await reply(p, "nope") }
        let others = try (0..<2).map { _ in try Child(Built.binary("moonflow-serve-testapp"), [url, "counter"]) }
        defer { for other in others { other.kill() } }
        for other in others { try other.waitFor(#""value":{"count":0}"#) }
        let deadline = Date().addingTimeInterval(30)
        while server.lines.filter({ $0.contains(#""event":"inspector""#) }).count < 3 {
            guard Date() < deadline else { throw Failure("not every app got its page: \(server.lines)") }
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        XCTAssertEqual(try get(page).status, 200)

        kill(first.pid, SIGCONT)
        for p in pages {
            let done = try await reply(p, "dispatch")
            XCTAssertEqual(done["ok"], true, "\(done)")
        }
        try first.waitFor(#""value":{"count":\#(pages.count)}"#)
    }

    /// Each app run got an inspector's server (a listening socket) and hub that stayed
    /// after the app went away. An app that restarts now ends its earlier run's page: the
    /// server's descriptors stay as they were, and the old page's port is closed.
    func testAnAppThatRestartsLeavesNoServerBehind() throws {
        let server = try Child(Built.binary("moonflow"), ["serve", folder.path, "--format", "jsonl"])
        defer { server.kill() }
        let served = try server.waitFor(#""event":"serve""#)
        let url = try XCTUnwrap(try LuaValue(json: served)["url"]?.stringValue)
        func count(_ text: String) -> Int { server.lines.filter { $0.contains(text) }.count }
        func waitUntil(_ text: String, count n: Int) throws {
            let deadline = Date().addingTimeInterval(30)
            while count(text) < n {
                guard Date() < deadline else { throw Failure("fewer than \(n) lines with \(text): \(server.lines)") }
                Thread.sleep(forTimeInterval: 0.01)
            }
        }
        func descriptors() throws -> Int {
            try FileManager.default.contentsOfDirectory(atPath: "/proc/\(server.pid)/fd").count
        }
        var pages: [String] = []
        var open: [Int] = []
        for run in 1...8 {
            let app = try Child(Built.binary("moonflow-serve-testapp"), [url, "counter"])
            try waitUntil(#""event":"inspector""#, count: run)
            try app.waitFor(#""value":{"count":0}"#)
            let line = server.lines.filter { $0.contains(#""event":"inspector""#) }[run - 1]
            pages.append(try XCTUnwrap(try LuaValue(json: line)["url"]?.stringValue))
            open.append(try descriptors())
            app.kill()
            app.waitUntilExit()
            try waitUntil("went away", count: run)
        }
        XCTAssertLessThanOrEqual(open[7], open[2] + 2, "descriptors after each restart: \(open)")
        XCTAssertEqual(try get(pages[7]).status, 200)
        XCTAssertThrowsError(try get(pages[0]), "the first run's page is closed")
    }

    /// Served on every address, the URL printed names one of this machine's own (not
    /// 0.0.0.0, which a phone cannot open), and a request naming it in `Host` is answered;
    /// another name still gets 403. The same for `run --inspect 0.0.0.0:0`.
    func testServingEveryAddressPrintsAndTakesTheMachinesOwnAddress() throws {
        let server = try Child(
            Built.binary("moonflow"), ["serve", folder.path, "--format", "jsonl", "--host", "0.0.0.0"])
        defer { server.kill() }
        let served = try server.waitFor(#""event":"serve""#)
        let url = try XCTUnwrap(try LuaValue(json: served)["url"]?.stringValue)
        let address = try XCTUnwrap(URLComponents(string: url))
        let host = try XCTUnwrap(address.host), port = try XCTUnwrap(address.port)
        let token = try XCTUnwrap(address.queryItems?.first?.value)
        XCTAssertNotEqual(host, "0.0.0.0", url)
        let own = MachineAddressesForTests.interfaces().filter { !$0.hasPrefix("127.") && !$0.contains(":") }
        if let first = own.first { XCTAssertEqual(host, first, "the URL names this machine's address") }
        let files = try RawHTTP.send(
            ["GET /files/counter/init.lua?token=\(token) HTTP/1.1", "Host: \(host):\(port)", "Connection: close"],
            port: port, host: host)
        XCTAssertEqual(files.status, 200, files.body)
        let other = try RawHTTP.send(
            ["GET /files/counter/init.lua?token=\(token) HTTP/1.1", "Host: evil.example:\(port)", "Connection: close"],
            port: port, host: host)
        XCTAssertEqual(other.status, 403)

        let run = try Child(
            Built.binary("moonflow"),
            [
                "run", folder.appendingPathComponent("counter").path, "--inspect", "0.0.0.0:0", "--format", "jsonl",
                "--actions", "-",
            ])
        defer { run.kill() }
        let line = try run.waitFor(#""event":"inspector""#)
        let page = try XCTUnwrap(try LuaValue(json: line)["url"]?.stringValue)
        XCTAssertFalse(page.hasPrefix("http://0.0.0.0:"), page)
        XCTAssertEqual(try get(page).status, 200)
        XCTAssertTrue(run.errors.contains("is reachable from the network"), run.errors)
    }

    /// An app loaded a folder of its working directory named like the plugin
    /// instead of the dev server's copy (and `require` of its modules the same), so no save
    /// ever reloaded it. The server's copy comes first now.
    func testAnAppLoadsTheServersCopyNotAFolderOfItsWorkingDirectory() throws {
        try write("return { by = 5 }\n", to: "counter/step.lua")
        try write(
            """
            local mf = require "moonflow"
            local step = require "counter.step"
            return mf.feature {
              name = "counter", initial = { count = 0 }, actions = { increment = {} }, mutations = { add = { n = "integer" } },
              handle = function() return { type = "add", n = step.by } end,
              reduce = function(state, m) state.count = state.count + m.n return state end,
            }
            """, to: "counter/init.lua")
        // The app's working folder holds a stale copy of the plugin and of its module.
        let stale = folder.appendingPathComponent("app")
        try write("return { by = 1000 }\n", to: "app/counter/step.lua")
        try write(
            """
            local mf = require "moonflow"
            return mf.feature { name = "stale", initial = { count = -1 }, actions = { increment = {} }, mutations = {},
              handle = function() end, reduce = function(s) return s end }
            """, to: "app/counter/init.lua")
        let served = folder.appendingPathComponent("served")
        try FileManager.default.createDirectory(at: served, withIntermediateDirectories: true)
        try FileManager.default.moveItem(
            at: folder.appendingPathComponent("counter"), to: served.appendingPathComponent("counter"))
        let server = try Child(Built.binary("moonflow"), ["serve", served.path, "--format", "jsonl"])
        defer { server.kill() }
        let line = try server.waitFor(#""event":"serve""#)
        let url = try XCTUnwrap(try LuaValue(json: line)["url"]?.stringValue)
        let app = try Child(Built.binary("moonflow-serve-testapp"), [url, "counter"], directory: stale)
        defer { app.kill() }
        try app.waitFor(#""value":{"count":0}"#)
        app.send(#"{"type":"increment"}"#)
        try app.waitFor(#""value":{"count":5}"#)
        // A save reaches it.
        try Data("return { by = 7 }\n".utf8).write(to: served.appendingPathComponent("counter/step.lua"))
        try app.waitFor(#""kind":"reload""#)
        app.send(#"{"type":"increment"}"#)
        try app.waitFor(#""value":{"count":12}"#)
    }
}

/// The machine's interface addresses, read as the server reads them.
enum MachineAddressesForTests {
    static func interfaces() -> [String] {
        var out: [String] = []
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return [] }
        defer { freeifaddrs(list) }
        var entry: UnsafeMutablePointer<ifaddrs>? = first
        while let item = entry {
            defer { entry = item.pointee.ifa_next }
            guard let address = item.pointee.ifa_addr, Int32(address.pointee.sa_family) == AF_INET,
                (item.pointee.ifa_flags & UInt32(IFF_UP)) != 0
            else { continue }
            var buffer = [CChar](repeating: 0, count: 64)
            address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
                var a = v4.pointee.sin_addr
                _ = inet_ntop(AF_INET, &a, &buffer, socklen_t(buffer.count))
            }
            out.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return out
    }
}
