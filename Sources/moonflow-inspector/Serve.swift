import Foundation
import LuaKit
import MoonflowEvents
import MoonflowHost
import MoonflowInspector
import MoonflowLua
import MoonflowTool
import Streams

/// `moonflow serve`, which execs this program as `moonflow-inspector serve …` once it has
/// read its own arguments (`ServeArguments` is how they come): the dev server, the watcher
/// that pushes saves, and what each app's feature shows in the terminal (its events as
/// `moonflow run` prints them, an inspector of its own, the recording).
enum Serve {
    /// The arguments `moonflow serve` passes: `--listen HOST:PORT --format pretty|jsonl
    /// [--record FILE] [--token TOKEN] [--color] FOLDER...`.
    struct Arguments {
        var address = "127.0.0.1:0"
        var format = OutputFormat.pretty
        var record: String?
        var token = InspectorServer.makeToken()
        var color = false
        var folders: [String] = []

        init?(_ arguments: [String]) {
            var i = 0
            while i < arguments.count {
                let flag = arguments[i]
                let value = i + 1 < arguments.count ? arguments[i + 1] : nil
                switch flag {
                case "--listen": guard let value else { return nil }; address = value; i += 2
                case "--format": guard let value, let f = OutputFormat(rawValue: value) else { return nil }; format = f; i += 2
                case "--record": guard let value else { return nil }; record = value; i += 2
                case "--token": guard let value else { return nil }; token = value; i += 2
                case "--color": color = true; i += 1
                default: folders.append(flag); i += 1
                }
            }
            if folders.isEmpty { return nil }
        }
    }

    static func main(_ raw: [String]) -> Never {
        guard let arguments = Arguments(raw), let address = try? InspectorPipe.address(arguments.address) else {
            fail("moonflow serve starts this program beside itself; run that instead (moonflow serve --help)", status: 2)
        }
        let terminal = Terminal(format: arguments.format, color: arguments.color)
        let recorder = Locked<SessionRecorder?>(nil)
        if let path = arguments.record {
            do { let made = try SessionRecorder(path: path); recorder.withLock { $0 = made } } catch { fail("moonflow: --record \(error)", status: 1) }
        }
        let server: DevServer
        do {
            server = try DevServer(folders: arguments.folders, host: address.host, port: address.port, token: arguments.token,
                                   log: { terminal.log($0) }) { app, run in
                var observers: [any RunObserver] = [terminal.observer(app: app, feature: run.name)]
                // The first feature an app runs is recorded (replay takes one feature per file).
                if let recording = recorder.withLock({ held in defer { held = nil }; return held }) { observers.append(recording) }
                let hub = InspectorHub(rerun: FeatureRun.rerun, advice: { FlagHints.add(to: $0) })
                let page = InspectorServer(hub: hub, host: address.host, port: 0, shownBy: "that moonflow serve printed")
                // Awaited, not waited for: this runs on the app's connection, a Swift concurrency thread.
                if let url = try? await page.start() { terminal.inspector(url: url, app: app, feature: run.name) }
                observers.append(hub)
                return (observers, { await page.stop() })
            }
        } catch {
            fail("moonflow: serve: \(error)", status: 2)
        }
        let url: String
        do { url = try server.start() } catch { fail("moonflow: serve --host: \(error)", status: 1) }
        terminal.serving(url: url, plugins: server.plugins.map(\.name))
        let pusher = Pusher(server: server)
        let watcher = FileWatcher(folders: server.plugins.map(\.folder), files: []) { _, _ in pusher.saved() }
        do { try watcher.start() } catch { fail("moonflow: serve: cannot watch the folders: \(error)", status: 1) }
        while true { Thread.sleep(forTimeInterval: 3600) }
    }

    static func fail(_ message: String, status: Int32) -> Never {
        FileHandle.standardError.write(Data((message + "\n").utf8))
        exit(status)
    }
}

/// Pushes each burst of saves, by `--watch`'s rules: a burst that changed nothing is passed
/// over, and a file that does not compile gets a moment (an editor may still be writing it)
/// before the files are read again and pushed as they are then (a real mistake goes to the
/// apps, which keep their old code and report it).
final class Pusher: @unchecked Sendable {
    private let server: DevServer
    private let lua: LuaState?

    init(server: DevServer) {
        self.server = server
        lua = try? LuaState()
    }

    /// Called on the watcher's thread, one burst at a time.
    func saved() {
        let now = DevServer.files(of: server.plugins)
        if let lua, now.contains(where: { path, text in (try? lua.load(string: text, name: path)) == nil }) {
            Thread.sleep(forTimeInterval: FeatureRun.settleAfterFailedSave)
            server.publish(DevServer.files(of: server.plugins))
            return
        }
        server.publish(now)
    }
}

/// What `moonflow serve` prints: where it serves, the apps coming and going, and each app's
/// events as `moonflow run` prints them (pretty or jsonl), on standard output.
final class Terminal: @unchecked Sendable {
    private let format: OutputFormat
    private let color: Bool
    private let lock = NSLock()

    init(format: OutputFormat, color: Bool) {
        self.format = format
        self.color = color
    }

    private func write(_ text: String) {
        lock.withLock { FileHandle.standardOutput.write(Data((text + "\n").utf8)) }
    }

    private func q(_ s: String) -> String { (try? LuaValue.string(LuaString(s)).json()) ?? "\"\"" }

    func serving(url: String, plugins: [String]) {
        let connect = "try await host.connect(devServer: \"\(url)\")"
        switch format {
        case .jsonl:
            write("{\"event\":\"serve\",\"t\":0,\"url\":\(q(url)),\"plugins\":[\(plugins.map(q).joined(separator: ","))],\"connect\":\(q(connect))}")
        case .pretty:
            write("moonflow serve: \(plugins.map { LuaValue.escaped($0) }.joined(separator: ", ")) at \(url)\n  in the app (debug builds): \(connect)")
        }
    }

    func inspector(url: String, app: String, feature: String) {
        switch format {
        case .jsonl: write("{\"event\":\"inspector\",\"t\":0,\"url\":\(q(url)),\"app\":\(q(app)),\"feature\":\(q(feature))}")
        // Names come from outside (an app's process name, a plugin's `name`): escaped before the
        // terminal, as event data is, so none can clear the screen or set the title.
        case .pretty: write("  inspector for \(LuaValue.escaped(app)) \(LuaValue.escaped(feature)): \(url)")
        }
    }

    /// An app connected or went away: a `log` line.
    func log(_ message: String) {
        switch format {
        case .jsonl: write("{\"event\":\"log\",\"t\":0,\"message\":\(q(message))}")
        case .pretty: write("  · \(LuaValue.escaped(message))")
        }
    }

    func observer(app: String, feature: String) -> any RunObserver {
        Printer(terminal: self, printer: EventPrinter(format: format, color: color))
    }

    /// One feature's events, printed as they come.
    final class Printer: RunObserver, @unchecked Sendable {
        private let terminal: Terminal
        private let printer: EventPrinter
        init(terminal: Terminal, printer: EventPrinter) {
            self.terminal = terminal
            self.printer = printer
        }
        func started(_ run: RunDescription, dispatch: any RunDispatcher) {}
        func observe(_ event: FeatureEvent, t: Int, cause: LuaValue?) { terminal.write(printer.render(event, t: t)) }
        func input(_ action: LuaValue, t: Int) {}
    }
}
