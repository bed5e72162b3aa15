import Foundation
import MoonflowRun
import MoonflowTool
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LuaKit
import MoonflowEvents
import MoonflowHost
import MoonflowHostTools
import MoonflowInspector
import MoonflowLua
import MoonflowTesting
import PluginFixtures
import XCTest

/// The inspector's page in a real headless Chromium (Debian's `chromium`, which
/// scripts/setup installs), driven over the DevTools protocol: the timeline
/// shows every event, clicking a row shows the state at that step and its
/// diff, and the console stays free of errors.
///
/// `MOONFLOW_SCREENSHOT=docs/inspector.png` also saves what the page looks like
/// (the picture in docs/inspector.md is made this way).
final class PageInChromiumTests: XCTestCase {
    func testTheTimelineShowsEveryEventAndClickingARowShowsTheStateAtThatStep() async throws {
        let chromium = try PageInChromiumTests.chromium()
        let inspected = try InspectedRun()
        defer { inspected.stop() }
        for _ in 0..<30 { inspected.feed.send(#"{"type":"increment"}"#) }
        try inspected.waitForFrames(94)  // the state; action, mutation, state for each; milestone effects at 10, 20, 30

        let browser = try Chromium(executable: chromium)
        defer { browser.stop() }
        let tab = try await browser.openTab()
        defer { tab.close() }
        _ = try await tab.call("Runtime.enable")
        _ = try await tab.call("Log.enable")
        _ = try await tab.call("Page.enable")
        _ = try await tab.call("Page.navigate", #"{"url":"\#(inspected.url)"}"#)

        try await tab.waitUntil(#"document.getElementById("count").textContent"#, equals: "94 events")
        // The 5th increment's state is frame 15: click its row where it is drawn on the screen.
        _ = try await tab.evaluate(#"timelineEl.scrollTop = 15 * 22 - 100; render(); "ok""#)
        let box = try await tab.evaluate(
            #"(() => { const r = document.querySelector('.row[data-seq="15"]').getBoundingClientRect(); return [r.x + 20, r.y + r.height / 2]; })()"#
        )
        guard case .table(let point) = box, point.array.count == 2 else { throw Failure("row 15 is not drawn: \(box)") }
        for type in ["mousePressed", "mouseReleased"] {
            _ = try await tab.call(
                "Input.dispatchMouseEvent",
                #"{"type":"\#(type)","x":\#(point.array[0]),"y":\#(point.array[1]),"button":"left","clickCount":1}"#)
        }
        try await tab.waitUntil(##"document.querySelector("#tree").innerText.includes("count = 5")"##, equals: true)
        let diff = try await tab.evaluate(#"document.getElementById("diff").innerText.trim()"#)
        XCTAssertEqual(diff, "- count = 4\n+ count = 5")
        let selected = try await tab.evaluate(#"document.querySelector(".row.sel").dataset.seq"#)
        XCTAssertEqual(selected, "15")
        // Each increment starts a row of its own: only what it caused is indented under it.
        let indented = try await tab.evaluate(
            #"[document.querySelectorAll(".row.k-action.caused").length, document.querySelectorAll(".row.k-mutation.caused").length > 0]"#
        )
        XCTAssertEqual(indented, [0, true])

        if let path = ProcessInfo.processInfo.environment["MOONFLOW_SCREENSHOT"] {
            let shot = try await tab.call("Page.captureScreenshot", #"{"format":"png"}"#)
            let data = try XCTUnwrap(Data(base64Encoded: shot["data"]?.stringValue ?? ""))
            try data.write(to: URL(fileURLWithPath: path, relativeTo: InspectedRun.root))
        }

        // Toggling the 5th increment off: the counter then ends one lower, so only the last state differs.
        _ = try await tab.evaluate(
            #"document.querySelector('.row[data-seq="13"]').click(); document.getElementById("toggle").click(); "ok""#)
        try await tab.waitUntil(
            #"document.getElementById("reply").textContent"#, equals: "1 actions off, 1 later steps differ (marked red)"
        )
        let marked = try await tab.evaluate(
            #"[document.querySelector(".row.off").dataset.seq, document.getElementById("recomputedTree").innerText.includes("count = 29")]"#
        )
        XCTAssertEqual(marked, ["13", true])
        // A step opens in the debugger from its button; this run has none, and the page says how to get one.
        _ = try await tab.evaluate(
            #"document.querySelector('.row[data-seq="13"]').click(); document.getElementById("debug").click(); "ok""#)
        try await tab.waitUntil(
            #"document.getElementById("reply").textContent"#, equals: LuaValue("debug: \(HostError.noDebugger)"))
        XCTAssertEqual(tab.consoleErrors, [], "the page logged errors")

        // What the page exports is a recording that `moonflow replay` re-runs identically.
        let exported = try await tab.evaluate("recording()")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent(
            "moonflow-export-\(UUID().uuidString).jsonl")
        defer { try? FileManager.default.removeItem(at: file) }
        try XCTUnwrap(exported.stringValue).write(to: file, atomically: true, encoding: .utf8)
        let report = Report()
        var replay = SessionReplay(file: file.path)
        replay.pluginsFolder = InspectedRun.root.path
        replay.write = { report.add($0) }
        XCTAssertEqual(replay.run(), 0, report.lines.joined(separator: "\n"))
        XCTAssertEqual(report.lines, ["replay \(file.path): identical (30 inputs, 31 states)"])
    }

    func testAMarkedStepShowsTheNewStateAndDiffAndTheTimelineFilters() async throws {
        let chromium = try PageInChromiumTests.chromium()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "moonflow-page-rerun-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let plugin = folder.appendingPathComponent("counter")
        try FileManager.default.copyItem(at: InspectedRun.root.appendingPathComponent("plugins/counter"), to: plugin)
        let inspected = try InspectedRun(path: plugin.path)
        defer { inspected.stop() }
        for _ in 0..<3 { inspected.feed.send(#"{"type":"increment"}"#) }
        try inspected.waitForFrames(10)
        let source = plugin.appendingPathComponent("init.lua")
        let code = try String(contentsOf: source, encoding: .utf8)
        try code.replacingOccurrences(of: "state.count + m.n", with: "state.count + 2 * m.n").write(
            to: source, atomically: true, encoding: .utf8)

        let browser = try Chromium(executable: chromium)
        defer { browser.stop() }
        let tab = try await browser.openTab()
        defer { tab.close() }
        _ = try await tab.call("Runtime.enable")
        _ = try await tab.call("Page.navigate", #"{"url":"\#(inspected.url)"}"#)
        try await tab.waitUntil(#"document.getElementById("count").textContent"#, equals: "10 events")
        _ = try await tab.evaluate(#"document.getElementById("rerun").click(); "ok""#)
        try await tab.waitUntil(
            #"document.getElementById("reply").textContent"#, equals: "3 steps differ now (marked red)")
        _ = try await tab.evaluate(#"document.querySelector('.row[data-seq="3"]').click(); "ok""#)
        try await tab.waitUntil(#"!document.getElementById("rerunNow").hidden"#, equals: true)
        let diff = try await tab.evaluate(#"document.getElementById("rerunDiff").innerText.trim()"#)
        XCTAssertEqual(diff, "- count = 1\n+ count = 2")
        let now = try await tab.evaluate(#"document.getElementById("rerunTree").innerText.includes("count = 2")"#)
        XCTAssertEqual(now, true)
        // The mutation of a marked step shows it too (its state frame is the one marked):
        // before, selecting it hid the re-run's diff.
        _ = try await tab.evaluate(#"document.querySelector('.row[data-seq="5"]').click(); "ok""#)
        try await tab.waitUntil(
            ##"document.getElementById("title").textContent.startsWith("#5 mutation")"##, equals: true)
        let hidden = try await tab.evaluate(#"document.getElementById("rerunNow").hidden"#)
        XCTAssertEqual(hidden, false)
        let mutationDiff = try await tab.evaluate(#"document.getElementById("rerunDiff").innerText.trim()"#)
        XCTAssertEqual(mutationDiff, "- count = 2\n+ count = 4")

        // The timeline by kind, then by text.
        _ = try await tab.evaluate(
            #"(() => { const k = document.getElementById("kind"); k.value = "mutation"; k.onchange(); return "ok"; })()"#
        )
        try await tab.waitUntil(#"document.getElementById("count").textContent"#, equals: "3 of 10 events")
        let kinds = try await tab.evaluate(
            #"[...document.querySelectorAll(".row")].every(r => r.classList.contains("k-mutation"))"#)
        XCTAssertEqual(kinds, true)
        _ = try await tab.evaluate(
            #"(() => { const k = document.getElementById("kind"); k.value = ""; k.onchange(); const s = document.getElementById("search"); s.value = '"n":1'; s.oninput(); return "ok"; })()"#
        )
        let found = try await tab.evaluate(#"document.getElementById("count").textContent"#)
        XCTAssertEqual(found, "3 of 10 events", "the three mutations hold \"n\":1: \(found)")
        _ = try await tab.evaluate(
            #"(() => { const s = document.getElementById("search"); s.value = "no such text"; s.oninput(); return "ok"; })()"#
        )
        try await tab.waitUntil(#"document.getElementById("count").textContent"#, equals: "0 of 10 events")
        XCTAssertEqual(tab.consoleErrors, [], "the page logged errors")
    }

    /// The checkout of issue 45: an action's timer answers after a later action was handled.
    /// On the virtual clock, so the order is the run's, not the machine's speed: the timer
    /// of `incrementLater` (frame 1) fires at 100 ms, after the `increment` sent at 50 ms
    /// (frames 2 to 4) and before the `reset` sent at 200 ms (frames 7 to 9).
    private func lateTimerRun() throws -> InspectedRun {
        let inspected = try InspectedRun(clock: .virtual)
        inspected.feed.send(
            #"{"type":"incrementLater","ms":100}"#, #"{"at":50,"send":{"type":"increment"}}"#,
            #"{"at":200,"send":{"type":"reset"}}"#)
        try inspected.waitForFrames(10)
        return inspected
    }

    private func openPage(_ browser: Chromium, _ inspected: InspectedRun) async throws -> DevTools {
        let tab = try await browser.openTab()
        _ = try await tab.call("Runtime.enable")
        _ = try await tab.call("Log.enable")
        _ = try await tab.call("Page.navigate", #"{"url":"\#(inspected.url)"}"#)
        try await tab.waitUntil(#"document.getElementById("count").textContent"#, equals: "10 events")
        return tab
    }

    func testALateMutationIsShownUnderTheActionThatCausedItAndMarkedLate() async throws {
        let chromium = try PageInChromiumTests.chromium()
        let inspected = try lateTimerRun()
        defer { inspected.stop() }
        let browser = try Chromium(executable: chromium)
        defer { browser.stop() }
        let tab = try await openPage(browser, inspected)
        defer { tab.close() }

        // The timer's mutation (5) and state (6) are drawn under incrementLater (1), not under increment (2).
        let rows = try await tab.evaluate(
            ##"[...document.querySelectorAll("#rows .row")].sort((a, b) => a.offsetTop - b.offsetTop).map(r => r.dataset.seq)"##
        )
        XCTAssertEqual(rows, ["0", "1", "5", "6", "2", "3", "4", "7", "8", "9"])
        let late = try await tab.evaluate(
            ##"[...document.querySelectorAll("#rows .row.late")].map(r => r.dataset.seq)"##)
        XCTAssertEqual(late, ["5", "6"])
        let row = try await tab.evaluate(
            #"(() => { const r = document.querySelector('.row[data-seq="5"]'); return [r.classList.contains("caused"), r.querySelector(".t").textContent, r.querySelector(".late").textContent]; })()"#
        )
        XCTAssertEqual(row, [true, "100 ms", "late: after #2 increment"])
        // The increment's own mutation is neither late nor moved.
        let own = try await tab.evaluate(#"document.querySelector('.row[data-seq="3"]').classList.contains("late")"#)
        XCTAssertEqual(own, false)
        _ = try await tab.evaluate(#"document.querySelector('.row[data-seq="5"]').click(); "ok""#)
        let cause = try await tab.evaluate(#"document.getElementById("cause").textContent"#)
        XCTAssertEqual(cause, "caused by #1 incrementLater, arrived late, after #2 increment")
        XCTAssertEqual(tab.consoleErrors, [], "the page logged errors")
    }

    func testAMutationRowShowsTheStateAfterItAndItsDiffFirst() async throws {
        let chromium = try PageInChromiumTests.chromium()
        let inspected = try lateTimerRun()
        defer { inspected.stop() }
        let browser = try Chromium(executable: chromium)
        defer { browser.stop() }
        let tab = try await openPage(browser, inspected)
        defer { tab.close() }

        // The late mutation: the state it was reduced into (count 2), and what it changed.
        _ = try await tab.evaluate(#"document.querySelector('.row[data-seq="5"]').click(); "ok""#)
        try await tab.waitUntil(#"document.querySelector(".row.sel").dataset.seq"#, equals: "5")
        let diff = try await tab.evaluate(#"document.getElementById("diff").innerText.trim()"#)
        XCTAssertEqual(diff, "- count = 1\n+ count = 2")
        let state = try await tab.evaluate(
            #"[document.getElementById("treeTitle").textContent, document.getElementById("tree").innerText.trim()]"#)
        XCTAssertEqual(state, ["state after this mutation", "state {1}\ncount = 2"])
        // The reset's mutation: from 2 to 0.
        _ = try await tab.evaluate(#"document.querySelector('.row[data-seq="8"]').click(); "ok""#)
        let reset = try await tab.evaluate(
            #"[document.getElementById("diff").innerText.trim(), document.getElementById("tree").innerText.includes("count = 0")]"#
        )
        XCTAssertEqual(reset, ["- count = 2\n+ count = 0", true])
        // The diff comes before the raw frame in the detail.
        let first = try await tab.evaluate(
            #"Boolean(document.getElementById("diff").compareDocumentPosition(document.getElementById("raw")) & Node.DOCUMENT_POSITION_FOLLOWING)"#
        )
        XCTAssertEqual(first, true)
        XCTAssertEqual(tab.consoleErrors, [], "the page logged errors")
    }

    func testARowsRawFrameIsFoldedUntilOpened() async throws {
        let chromium = try PageInChromiumTests.chromium()
        let inspected = try lateTimerRun()
        defer { inspected.stop() }
        let browser = try Chromium(executable: chromium)
        defer { browser.stop() }
        let tab = try await openPage(browser, inspected)
        defer { tab.close() }

        _ = try await tab.evaluate(#"document.querySelector('.row[data-seq="3"]').click(); "ok""#)
        try await tab.waitUntil(#"document.querySelector(".row.sel").dataset.seq"#, equals: "3")
        // Folded: the frame is there, but not shown until its disclosure is opened.
        let folded = try await tab.evaluate(
            #"[document.getElementById("raw").open, document.getElementById("event").checkVisibility(), document.getElementById("event").textContent.includes('"event": "mutation"')]"#
        )
        XCTAssertEqual(folded, [false, false, true])
        _ = try await tab.evaluate(##"document.querySelector("#raw summary").click(); "ok""##)
        try await tab.waitUntil(#"document.getElementById("event").checkVisibility()"#, equals: true)
        XCTAssertEqual(tab.consoleErrors, [], "the page logged errors")
    }

    final class Report: @unchecked Sendable {
        private let lock = NSLock()
        private var _lines: [String] = []
        var lines: [String] { lock.withLock { _lines } }
        func add(_ line: String) { lock.withLock { _lines.append(line) } }
    }

    func testTenThousandEventsOfAThousandRowStateStayBrowsable() async throws {
        let chromium = try PageInChromiumTests.chromium()
        // The events a feature with a 1,000-row state sends when each action flips one row
        // (made here rather than by Lua, so a debug build makes them quickly).
        let hub = InspectorHub()
        let server = InspectorServer(hub: hub)
        let url = try await server.start()
        let schema = try Schema(kind: "action", declaration: ["touch": ["i": "integer"]])
        hub.started(
            RunDescription(name: "big", version: 1, path: "big.lua", actions: schema, clock: .real),
            dispatch: NoDispatch())
        var rows = (1...1000).map { i -> LuaValue in ["id": .integer(Int64(i)), "title": "row \(i)", "done": false] }
        hub.observe(.state(["rows": .table(LuaTable(array: rows))], seq: 0), t: 0, cause: nil)
        for n in 1...3333 {
            let i = n % 1000
            let action: LuaValue = ["type": "touch", "i": .integer(Int64(i + 1))]
            hub.observe(.action(action), t: n, cause: nil)
            hub.observe(.mutation(["type": "toggled", "i": .integer(Int64(i + 1))], seq: n), t: n, cause: action)
            rows[i]["done"] = .boolean(!(rows[i]["done"]?.isTruthy ?? false))
            hub.observe(.state(["rows": .table(LuaTable(array: rows))], seq: n), t: n, cause: action)
        }
        XCTAssertEqual(hub.frameCount, 10_000)

        let browser = try Chromium(executable: chromium)
        defer { browser.stop() }
        let tab = try await browser.openTab()
        defer { tab.close() }
        _ = try await tab.call("Runtime.enable")
        _ = try await tab.call("Log.enable")
        _ = try await tab.call("Page.navigate", #"{"url":"\#(url)"}"#)
        try await tab.waitUntil(#"document.getElementById("count").textContent"#, equals: "10000 events")
        // Only the rows in view are in the page.
        let drawn = try await tab.evaluate(##"document.querySelectorAll("#rows .row").length"##)
        guard case .integer(let rows) = drawn else { throw Failure("no rows drawn: \(drawn)") }
        XCTAssertLessThan(rows, 100)
        XCTAssertGreaterThan(rows, 10)

        // The last step: action 3333 touched row 334 the second time (true, then false).
        _ = try await tab.evaluate(#"timelineEl.scrollTop = timelineEl.scrollHeight; render(); "ok""#)
        _ = try await tab.evaluate(#"document.querySelector('.row[data-seq="9999"]').click(); "ok""#)
        let diff = try await tab.evaluate(#"document.getElementById("diff").innerText.trim()"#)
        XCTAssertEqual(diff, "- rows[334].done = true\n+ rows[334].done = false")
        // The tree draws 200 entries at a time as it is opened.
        _ = try await tab.evaluate(##"document.querySelector("#tree details details").open = true; "ok""##)
        try await tab.waitUntil(##"document.querySelectorAll("#tree details details > details").length"##, equals: 200)
        let more = try await tab.evaluate(##"document.querySelector("#tree details details > button").textContent"##)
        XCTAssertEqual(more, "show 200 more")
        XCTAssertEqual(tab.consoleErrors, [], "the page logged errors")
    }

    struct NoDispatch: RunDispatcher {
        func dispatch(_ action: LuaValue) throws { throw Failure("this run takes no actions") }
        var inFlight: [FeatureFlight] { [] }
        func restart() throws { throw Failure("this run cannot restart") }
    }

    /// Where Chromium is; a skip that says how to get it when it is missing.
    static func chromium() throws -> String {
        for path in ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"]
        where FileManager.default.isExecutableFile(atPath: path) { return path }
        throw XCTSkip(
            "Chromium is not installed, so the page was not tried in a browser: run scripts/setup (it installs Debian's chromium)"
        )
    }
}

/// A headless Chromium with its DevTools endpoint on a free port.
final class Chromium: @unchecked Sendable {
    private let process = Process()
    private let profile: URL
    /// The browser's DevTools WebSocket (`ws://127.0.0.1:PORT/devtools/browser/ID`).
    let endpoint: String

    init(executable: String) throws {
        profile = FileManager.default.temporaryDirectory.appendingPathComponent(
            "moonflow-chromium-\(UUID().uuidString)")
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = [
            "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
            "--remote-debugging-port=0", "--remote-allow-origins=*", "--window-size=1280,800",
            "--user-data-dir=\(profile.path)", "about:blank",
        ]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        // Chromium says where DevTools listens on standard error: `DevTools listening on ws://127.0.0.1:PORT/...`.
        var text = ""
        let deadline = Date().addingTimeInterval(60)
        while !text.contains("DevTools listening on ws://") {
            let data = errors.fileHandleForReading.availableData
            if data.isEmpty || Date() > deadline {
                process.terminate(); throw Failure("chromium did not start its DevTools endpoint: \(text)")
            }
            text += String(decoding: data, as: UTF8.self)
        }
        let after = text.components(separatedBy: "DevTools listening on ")[1]
        endpoint = String(after.prefix { !$0.isWhitespace })
        // Keep draining standard error so Chromium never blocks on a full pipe.
        errors.fileHandleForReading.readabilityHandler = { _ = $0.availableData }
    }

    /// A new blank page, driven through the browser's DevTools WebSocket (a flat session).
    func openTab() async throws -> DevTools {
        let browser = DevTools(page: try await Page.open(endpoint))
        let target = try await browser.call("Target.createTarget", #"{"url":"about:blank"}"#)
        guard let id = target["targetId"]?.stringValue else { throw Failure("chromium made no page: \(target)") }
        let attached = try await browser.call("Target.attachToTarget", #"{"targetId":"\#(id)","flatten":true}"#)
        guard let session = attached["sessionId"]?.stringValue else {
            throw Failure("chromium did not attach to the page: \(attached)")
        }
        browser.session = session
        return browser
    }

    func stop() {
        process.terminate()
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: profile)
    }
}

/// The DevTools protocol over one page's WebSocket: calls by id, events kept.
final class DevTools: @unchecked Sendable {
    private let page: Page
    private let lock = NSLock()
    private var nextID = 0
    /// The page's session, once attached (commands go to it, events are read from it).
    var session: String?

    init(page: Page) { self.page = page }

    /// Sends `method` and waits for its result.
    /// - Throws: the protocol's error message.
    func call(_ method: String, _ params: String = "{}") async throws -> LuaValue {
        let id = lock.withLock {
            nextID += 1; return nextID
        }
        let target = session.map { #","sessionId":"\#($0)""# } ?? ""
        try await page.send(#"{"id":\#(id),"method":"\#(method)","params":\#(params)\#(target)}"#)
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if let reply = page.all.first(where: { $0["id"] == .integer(Int64(id)) }) {
                if let error = reply["error"] { throw Failure("\(method): \(error)") }
                return reply["result"] ?? .nil
            }
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        throw Failure("\(method) got no answer within 60 s")
    }

    /// The value of a JavaScript expression in the page.
    func evaluate(_ expression: String) async throws -> LuaValue {
        let quoted = try LuaValue.string(LuaString(expression)).json()
        let result = try await call("Runtime.evaluate", #"{"expression":\#(quoted),"returnByValue":true}"#)
        if let exception = result["exceptionDetails"] { throw Failure("\(expression) threw \(exception)") }
        return result["result"]?["value"] ?? .nil
    }

    /// Evaluates `expression` until it gives `expected` (up to 60 s: a loaded machine is slow, never wrong).
    func waitUntil(_ expression: String, equals expected: LuaValue) async throws {
        let deadline = Date().addingTimeInterval(60)
        var last: LuaValue = .nil
        while Date() < deadline {
            last = (try? await evaluate(expression)) ?? .nil
            if last == expected { return }
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        throw Failure("\(expression) is \(last), not \(expected), after 60 s; console: \(consoleErrors)")
    }

    /// Uncaught exceptions, `console.error` calls and error log entries, as text.
    var consoleErrors: [String] {
        page.all.compactMap { event -> String? in
            switch event["method"]?.stringValue {
            case "Runtime.exceptionThrown": return "exception: \(event["params"]?["exceptionDetails"] ?? .nil)"
            case "Runtime.consoleAPICalled" where event["params"]?["type"]?.stringValue == "error":
                return "console.error: \(event["params"]?["args"] ?? .nil)"
            case "Log.entryAdded" where event["params"]?["entry"]?["level"]?.stringValue == "error":
                return "log: \(event["params"]?["entry"]?["text"] ?? .nil) \(event["params"]?["entry"]?["url"] ?? .nil)"
            default: return nil
            }
        }
    }

    func close() { page.close() }
}
