import Foundation
import LuaKit
import MoonflowDebug
import MoonflowLua
import Streams

/// An app's link to `moonflow serve`, and the plugins served over it to the app's debug
/// build: the files come from the server, every save reloads the features loaded from
/// them, and the app's events go back to the terminal (logs, errors, the inspector,
/// `--record`). Made by `FeatureHost.connect(devServer:)`.
///
///     #if DEBUG
///     try await host.connect(devServer: "http://127.0.0.1:8377/?token=…")
///     #endif
///     let counter = try host.load("counter")   // from the server
///
/// - A save reloads as `FeatureHost.reload` does: validated first, then swapped with the
///   state kept (or migrated), work in flight kept. A save that does not load leaves the
///   feature on its old code; the error is on the feature's `errors` and in the terminal.
/// - When the server goes away the app keeps running on its last good code, and the
///   link connects again every second; once back, files saved meanwhile reload.
///
/// **Threading:** a thread of its own reads the server's messages and reloads; the
/// features' events are sent from a serial queue. Every method may be called from any thread.
package final class DevServerConnection: PluginTexts, @unchecked Sendable {
    /// `dev`: messages name a served file `dev:counter/init.lua`.
    package let name = "dev"
    /// The server's URL, as `moonflow serve` printed it.
    package let url: URL

    private let host: String
    private let port: Int
    private let token: String
    /// This app's identity for the server (the same across reconnections).
    private let appID = UUID().uuidString
    weak var featureHost: FeatureHost?

    private struct Session {
        let id: Int
        weak var feature: RunningFeature?
        let started: Date
        var line: String
    }

    private struct State {
        var files: [String: String] = [:]
        var snapshots = 0
        var socket: DevSocket?
        var stopped = false
        var lastFailure: String?
        var sessions: [Int: Session] = [:]
        var nextSession = 1
    }

    private let state = Locked(State())
    /// `moonflow serve --debug`: the debugger serving this app's host, and the session of the
    /// editor attached now (made when its first message comes).
    let debugging = Locked<(controller: DebugController, mailbox: DAPMailbox)?>(nil)
    private let ready = DispatchSemaphore(value: 0)
    private let outgoing = DispatchQueue(label: "moonflow.devserver.send")
    private let behindStop = DispatchQueue(label: "moonflow.devserver.debugged")

    init(url: URL, host featureHost: FeatureHost) throws {
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: false),
            components.scheme == "http", let host = components.host, let port = components.port,
            let token = components.queryItems?.first(where: { $0.name == "token" })?.value
        else {
            throw HostError(
                "\(DevServerConnection.redacted(url)): give the URL moonflow serve printed (http://HOST:PORT/?token=…)")
        }
        self.url = url
        self.host = host
        self.port = port
        self.token = token
        self.featureHost = featureHost
    }

    deinit { disconnect() }

    // MARK: - Plugin texts

    package func text(at path: String) throws -> String? { state.withLock { $0.files[path] } }

    package func pluginNames() -> [String] {
        state.withLock { state in
            Set(
                state.files.keys.compactMap { path -> String? in
                    let parts = path.split(separator: "/")
                    return parts.count == 2 && parts[1] == "init.lua" ? String(parts[0]) : nil
                }
            ).sorted()
        }
    }

    // MARK: - The link

    /// Whether the server is connected now.
    package var isConnected: Bool { state.withLock { $0.socket != nil } }

    /// Stops talking to the server for good; the features keep their code.
    package func disconnect() {
        let socket = state.withLock { s -> DevSocket? in
            s.stopped = true
            return s.socket
        }
        socket?.close()
    }

    /// Starts the link's thread and waits up to `timeout` for the server's files.
    func start(timeout: TimeInterval) throws {
        let thread = Thread { [self] in run() }
        thread.name = "moonflow dev server"
        thread.start()
        if ready.wait(timeout: .now() + timeout) == .timedOut || state.withLock({ $0.snapshots == 0 }) {
            let why = state.withLock { $0.lastFailure } ?? "no answer"
            disconnect()
            throw HostError(
                "no dev server at \(DevServerConnection.redacted(url)) (\(why)); start it with `moonflow serve plugins` and give the URL it prints"
            )
        }
    }

    /// `url` with its token's value left out (`?token=…`): an error's text reaches logs and
    /// crash reports, where the token would let anyone who reads them in.
    static func redacted(_ url: URL) -> String {
        url.absoluteString.replacingOccurrences(of: #"([?&]token=)[^&#]*"#, with: "$1…", options: .regularExpression)
    }

    /// The link's thread: connect, take messages until the connection ends, connect again.
    private func run() {
        var wait = 0.05
        while !state.withLock({ $0.stopped }) {
            do {
                let socket = try DevSocket.open(
                    host: host, port: port, path: "\(DevServerMessages.appPath)?token=\(token)", timeout: 5)
                let (sessions, stopped) = state.withLock { s -> ([Session], Bool) in
                    if !s.stopped { s.socket = socket }
                    return (Array(s.sessions.values).sorted { $0.id < $1.id }, s.stopped)
                }
                if stopped { socket.close(); return }
                wait = 0.05
                try socket.send(DevServerMessages.hello(app: appID, name: ProcessInfo.processInfo.processName))
                for session in sessions { try socket.send(session.line) }
                while let text = socket.receive() { handle(text) }
                socket.close()
            } catch {
                let first = state.withLock { s -> Bool in
                    s.lastFailure = "\(error)"
                    return s.snapshots == 0
                }
                // Refused before the app got any code (a wrong token), or nothing there at all (no
                // server started, a wrong port): `start` says so at once instead of waiting it out.
                if first, let failure = error as? DevSocket.Failure, failure.refused || failure.unreachable {
                    ready.signal()
                    return
                }
            }
            state.withLock { $0.socket = nil }
            guard !state.withLock({ $0.stopped }) else { return }
            Thread.sleep(forTimeInterval: wait)
            wait = min(wait * 2, 1)
        }
    }

    private func handle(_ text: String) {
        guard let message = DevServerMessages.read(text) else { return }
        if message.m == "dap" || message.m == "dap-end" {
            relayDebug(message)
            return
        }
        // While an editor debugs the app, a feature may be stopped on the host's executor:
        // what waits for it (a reload, a restart, a dispatch) waits on a queue of its own, in
        // order, so that the editor's `continue` still comes through this thread.
        if debugging.withLock({ $0 != nil }) {
            behindStop.async { [self] in handleNow(message) }
        } else {
            handleNow(message)
        }
    }

    private func handleNow(_ message: DevServerMessages.Message) {
        if let (files, changed) = DevServerMessages.files(message) {
            let noticed = Date()
            let (before, first) = state.withLock { s -> ([String: String], Bool) in
                defer { s.files = files; s.snapshots += 1 }
                return (s.files, s.snapshots == 0)
            }
            if first { ready.signal(); return }
            // After a reconnection, whatever differs from what the app holds changed.
            let changedPaths = changed ?? Set(before.keys).union(files.keys).filter { before[$0] != files[$0] }.sorted()
            reload(changed: changedPaths, noticed: noticed)
            return
        }
        guard let id = message.feature, let feature = state.withLock({ $0.sessions[id]?.feature }) else { return }
        answer(message, feature: feature, session: id)
    }

    /// Reloads every feature loaded from the server whose plugin has a changed file.
    private func reload(changed: [String], noticed: Date) {
        guard let host = featureHost, !changed.isEmpty else { return }
        let plugins = Set(changed.compactMap { $0.split(separator: "/").first.map(String.init) })
        let features = state.withLock { $0.sessions.values.sorted { $0.id < $1.id }.compactMap(\.feature) }
        for feature in features {
            // A composite's children change on the state executor (a reload adds or drops some).
            let files = host.perform { host.sourceFiles(of: feature) }.compactMap { host.sourceFile($0) }.filter {
                $0.0 === self
            }.map(\.1)
            let own = files.compactMap { $0.split(separator: "/").first.map(String.init) }
            guard !plugins.isDisjoint(with: own) else { continue }
            // Paths relative to the plugin's folder, as `--watch` reports them.
            let names = changed.filter { path in own.contains { path.hasPrefix($0 + "/") } }
                .map { String($0.drop { $0 != "/" }.dropFirst()) }
            // A failure is reported on the feature's `errors` (and so to the server); the old code runs on.
            _ = try? host.swapCode(of: feature, changed: names, since: noticed, restarting: false)
        }
    }

    /// Answers the server's `dispatch`, `restart`, `inflight` or `debug` for one feature.
    private func answer(_ message: DevServerMessages.Message, feature: RunningFeature, session: Int) {
        guard let id = message.object["id"]?.intValue.map(Int.init) else { return }
        var failure: String?
        var flights: [InspectorPipe.Flight]?
        switch message.m {
        case "dispatch":
            do { try feature.send(message.object["action"] ?? .nil) } catch { failure = "\(error)" }
        case "restart":
            do {
                guard let host = featureHost else { throw HostError("the app's host is gone") }
                _ = try host.swapCode(of: feature, changed: nil, since: Date(), restarting: true)
            } catch { failure = "\(error)" }
        case "inflight":
            flights = (featureHost?.perform { feature.inFlight } ?? []).map(InspectorPipe.Flight.init)
        case "debug":
            // An app's features run on its real clock: a past step cannot be run again exactly here.
            failure =
                "an app's features under `moonflow serve` cannot be run again to a step; open the plugin's steps in the debugger with `moonflow run PATH --inspect --debug PORT`"
        default:
            return
        }
        send(.reply(id: id, message: failure, flights: flights), session: session)
    }

    // MARK: - Features

    /// Streams `feature`'s events to the server from now on (called on the state executor,
    /// before the feature starts, so the server sees its first state).
    func attach(_ feature: RunningFeature, plugin: String) {
        let version =
            (feature as? LuaFeature)?.definition.version ?? (feature as? LuaComposite)?.definition.version ?? 1
        let actions = InspectorPipe.declared(feature.declaredActions)
        let clock: FeatureClock = featureHost?.configuration.virtualClock == true ? .virtual : .real
        let started = InspectorPipe.ToChild.started(
            name: feature.name, version: version, path: plugin, actions: actions, clock: clock)
        let (id, start) = state.withLock { s -> (Int, Date) in
            let id = s.nextSession
            s.nextSession += 1
            let now = Date()
            s.sessions[id] = Session(
                id: id, feature: feature, started: now, line: InspectorPipe.line(started, feature: id))
            return (id, now)
        }
        send(started, session: id)
        // Cast once here, not per event: a feature the host made is a bridged one.
        feature.outlet.add(
            { [weak self, weak feature = feature as? BridgedFeature] event in
                guard let self else { return }
                let t = Int(Date().timeIntervalSince(start) * 1000)
                // What the app sent, as `moonflow run` reports its input: the recording replays it.
                if case .action(let action) = event { self.send(.input(action, t: t), session: id) }
                self.send(.event(event, t: t, cause: feature?.eventCause, causeID: feature?.eventCauseID), session: id)
            },
            onFinish: { [weak self] in
                _ = self?.state.withLock { $0.sessions.removeValue(forKey: id) }
            })
    }

    /// Sends a message that names no feature.
    func sendUntagged(_ text: String) {
        outgoing.async { [weak self] in
            guard let socket = self?.state.withLock({ $0.socket }) else { return }
            try? socket.send(text)
        }
    }

    private func send(_ message: InspectorPipe.ToChild, session: Int) {
        let text = InspectorPipe.line(message, feature: session)
        outgoing.async { [weak self] in
            guard let socket = self?.state.withLock({ $0.socket }) else { return }
            try? socket.send(text)
        }
    }
}

extension FeatureHost {
    /// MoonflowHostTools' `connect(devServer:timeout:)`: the caller's task waits without holding
    /// a thread (the link is made on a thread of its own); a cancelled task's wait ends at once
    /// (`CancellationError`) and the link is let go.
    package func connectLink(devServer address: String, timeout: TimeInterval = 10) async throws -> DevServerConnection
    {
        guard let url = URL(string: address.trimmingWhitespace()) else {
            let shown = address.replacingOccurrences(
                of: #"([?&]token=)[^&#]*"#, with: "$1…", options: .regularExpression)
            throw HostError("\(shown) is not a URL; give the URL moonflow serve printed (http://HOST:PORT/?token=…)")
        }
        try Task.checkCancellation()
        let source = try DevServerConnection(url: url, host: self)
        // Cancelled, the wait ends at once and the link is let go, whenever the server answers.
        let wait = CancellableWait<DevServerConnection>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                guard wait.begin(continuation) else { return }
                let thread = Thread { [self] in
                    let linked = Result { try source.start(timeout: timeout) }
                    guard let continuation = wait.take() else { return source.disconnect() }
                    if case .success = linked { addDevServer(source) }
                    continuation.resume(with: linked.map { source })
                }
                thread.name = "moonflow dev server connect"
                thread.start()
            }
        } onCancel: {
            wait.cancel()
            source.disconnect()
        }
    }

    /// `connect(devServer:)` on the caller's thread, which it blocks until the server answers
    /// (the serve test app's plain main, the bench).
    @discardableResult
    package func connect(devServer url: URL, timeout: TimeInterval = 10) throws -> DevServerConnection {
        let source = try DevServerConnection(url: url, host: self)
        try source.start(timeout: timeout)
        addDevServer(source)
        return source
    }
}
