import Foundation
import MoonflowEvents
import MoonflowHost
import LuaKit
import MoonflowLua
import MoonflowInspector
import MoonflowRun
import Streams

/// `moonflow serve`, which execs this program as `moonflow-inspector serve …` once it has
/// read its own arguments (`Serve.Arguments` is how they come): the dev server, the watcher
/// that pushes saves, and what each app's feature shows in the terminal (its events as
/// `moonflow run` prints them, an inspector of its own, the recording).
package enum Serve {
    /// The arguments `moonflow serve` passes: `--listen HOST:PORT --format pretty|jsonl
    /// [--record FILE] [--token TOKEN] [--color] [--debug HOST:PORT] FOLDER...`.
    struct Arguments {
        var address = "127.0.0.1:0"
        var format = OutputFormat.pretty
        var record: String?
        var token = InspectorServer.makeToken()
        var color = false
        var debug: String?
        var folders: [String] = []

        init?(_ arguments: [String]) {
            var i = 0
            while i < arguments.count {
                let flag = arguments[i]
                let value = i + 1 < arguments.count ? arguments[i + 1] : nil
                switch flag {
                case "--listen": guard let value else { return nil }; address = value; i += 2
                case "--format":
                    guard let value, let f = OutputFormat(rawValue: value) else { return nil }; format = f; i += 2
                case "--record": guard let value else { return nil }; record = value; i += 2
                case "--token": guard let value else { return nil }; token = value; i += 2
                case "--color": color = true; i += 1
                case "--debug": guard let value else { return nil }; debug = value; i += 2
                default: folders.append(flag); i += 1
                }
            }
            if folders.isEmpty { return nil }
        }
    }

    package static func main(_ raw: [String]) -> Never {
        // Held before any thread starts, taken at the end: SIGINT and SIGTERM end the server
        // with status 0, as they end `moonflow run --watch`, even in a script's background.
        FeatureRun.holdStopSignals()
        guard let arguments = Arguments(raw), let address = try? InspectorPipe.address(arguments.address) else {
            fail(
                "moonflow serve starts this program beside itself; run that instead (moonflow serve --help)", status: 2)
        }
        let terminal = Terminal(format: arguments.format, color: arguments.color)
        let recorder = Locked<SessionRecorder?>(nil)
        if let path = arguments.record {
            do {
                let made = try SessionRecorder(path: path, effectEvents: false); recorder.withLock { $0 = made }
            } catch {
                fail("moonflow: --record \(error)", status: 1)
            }
        }
        let server: DevServer
        do {
            server = try DevServer(
                folders: arguments.folders, host: address.host, port: address.port, token: arguments.token,
                log: { terminal.log($0) }
            ) { app, run in
                var observers: [any RunObserver] = [terminal.observer(app: app, feature: run.name)]
                // The first feature an app runs is recorded (replay takes one feature per file).
                if let recording = recorder.withLock({ taken in
                    defer { taken = nil }; return taken
                }) {
                    observers.append(recording)
                }
                let hub = InspectorHub(rerun: FeatureRun.rerun, advice: { FlagHints.add(to: $0) })
                let page = InspectorServer(
                    hub: hub, host: address.host, port: 0, shownBy: "that moonflow serve printed")
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
        var relay: DebugRelay?
        if let debug = arguments.debug, let address = try? InspectorPipe.address(debug) {
            do { relay = try DebugRelay(server: server, host: address.host, port: address.port) } catch {
                fail("moonflow: --debug \(error)", status: 1)
            }
            if let relay {
                if !relay.isLoopback {
                    FileHandle.standardError.write(
                        Data(
                            "moonflow: warning: --debug \(debug) is reachable from the network: anyone who can reach this machine can attach, read the app's state and evaluate Lua in it; use 127.0.0.1 unless you mean it\n"
                                .utf8))
                }
                terminal.debugger(address: relay.address, token: relay.access.token, file: relay.access.file)
            }
        }
        let pusher = Pusher(server: server)
        let watcher = FileWatcher(folders: server.plugins.map(\.folder), files: []) { changed, _ in
            pusher.saved(changed)
        }
        do { try watcher.start() } catch { fail("moonflow: serve: cannot watch the folders: \(error)", status: 1) }
        // The relay serves editors as long as the server runs.
        withExtendedLifetime(relay) { FeatureRun.waitForStopSignal() }
        watcher.stop()
        exit(0)
    }

    static func fail(_ message: String, status: Int32) -> Never {
        FileHandle.standardError.write(Data((message + "\n").utf8))
        exit(status)
    }
}
