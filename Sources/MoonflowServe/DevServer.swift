import Foundation
import Hummingbird
import HummingbirdWebSocket
import LuaKit
import MoonflowEvents
import MoonflowHost
import MoonflowInspector
import MoonflowLua
import NIOCore
import Streams
#if canImport(Glibc)
import Glibc
#endif

/// `moonflow serve`'s server: plugin folders served to apps' hosts over HTTP and WebSocket
/// (`DevServerMessages` is the protocol), each save pushed to every connected app, and each feature an
/// app runs handed to observers (what prints it, records it, inspects it) as a run of
/// `moonflow run` is.
///
///     let server = try DevServer(folders: ["plugins"]) { app, run in [printer] }
///     let url = try server.start()                  // http://127.0.0.1:8377/?token=…
///     server.publish(updating: ["counter/init.lua": text])   // after a save
///
/// Behind `InspectorServer`'s checks (loopback unless another host is given, the token, the
/// `Host` header, a WebSocket's origin). It serves only `.lua` files inside the folders
/// given: a path with `.`, `..` or an empty part, a hidden file, or a file whose real path
/// (symbolic links followed) leaves its plugin's folder is refused with 403.
///
/// **Threading:** every method may be called from any thread; one lock guards the state.
package final class DevServer: @unchecked Sendable {
    /// A plugin the server holds: its name (`counter`), its folder as given and its real path.
    package struct Plugin: Sendable, Equatable {
        package let name: String
        package let folder: String
        let real: String
    }

    package let plugins: [Plugin]
    private let web: Locked<InspectorServer?> = Locked(nil)

    /// The observers of one feature an app runs, made when the app starts it: `app` is the
    /// app's process name, `run.path` the plugin's folder here (what `moonflow replay` loads).
    /// `close` lets go of what they hold (an inspector's server) once the app is gone for good.
    package typealias Observers =
        @Sendable (_ app: String, _ run: RunDescription) async
        -> (observers: [any RunObserver], close: @Sendable () async -> Void)

    private struct Connection {
        let send: @Sendable (String) -> Void
        var app = "app"
        var appID = ""
    }

    private final class Session: @unchecked Sendable {
        let observers: [any RunObserver]
        let close: @Sendable () async -> Void
        let dispatcher: RemoteDispatcher
        /// Which connection the session's commands go to now (the app's latest).
        let connection: Locked<Int?>
        init(
            observers: [any RunObserver], close: @escaping @Sendable () async -> Void, dispatcher: RemoteDispatcher,
            connection: Locked<Int?>
        ) {
            self.observers = observers
            self.close = close
            self.dispatcher = dispatcher
            self.connection = connection
        }
    }

    /// What the server keeps of apps that went away (no connection left): their sessions, so
    /// that one which comes back (the same app, reconnecting) finds its inspector pages, and
    /// one that crashed can still be looked at. An app of the same name that connects (a
    /// restart) ends them, and past `keptGoneApps` apps the oldest go: a server that sees
    /// apps restart all day keeps neither their sockets nor their memory.
    package static let keptGoneApps = 4
    /// Apps connected at once; one more is refused (it retries, as after any refusal).
    package static let appLimit = 32
    /// What one app may queue from the server (files not yet written to it) and send in one
    /// message (a feature's state with it): past either its connection ends.
    package static let appQueueBytes = 64 << 20
    package static let appMessageBytes = 32 << 20

    private let lock = NSLock()
    private var files: [String: String]
    private var connections: [Int: Connection] = [:]
    private var nextConnection = 0
    private var sessions: [String: Session] = [:]
    /// Apps that went away, oldest first: their id and name.
    private var gone: [(id: String, name: String)] = []
    private let observers: Observers
    private let log: @Sendable (String) -> Void
    /// Where the apps' debugger messages go (`--debug`: `DebugRelay`).
    private var debugMessages: (@Sendable (String) -> Void)?

    /// - Parameters:
    ///   - folders: plugin folders (with `init.lua`) or folders of them.
    ///   - log: where to say that an app connected or went away.
    /// - Throws: `HostError` naming a folder that holds no plugin.
    package init(
        folders: [String], host: String = "127.0.0.1", port: Int = 0, token: String = InspectorServer.makeToken(),
        log: @escaping @Sendable (String) -> Void = { _ in }, observers: @escaping Observers
    ) throws {
        plugins = try DevServer.plugins(in: folders)
        files = DevServer.files(of: plugins)
        self.observers = observers
        self.log = log
        web.withLock {
            $0 = InspectorServer(
                routes: { [weak self] router, server in self?.addRoutes(to: router, server: server) },
                host: host, port: port, token: token, shownBy: "that moonflow serve printed")
        }
    }

    /// Starts serving and waits until the port is bound.
    /// - Returns: the URL apps connect to, with the token.
    /// - Throws: `HostError` naming the address when it cannot be bound.
    package func start() throws -> String {
        try web.withLock { $0! }.start()
    }

    /// The server's token.
    package var token: String { web.withLock { $0!.token } }

    /// The files as last published (what an app that connects now gets).
    var published: [String: String] { lock.withLock { files } }

    /// The features' sessions kept now (of apps connected, or gone and kept).
    package var sessionCount: Int { lock.withLock { sessions.count } }

    // MARK: - Files

    /// The plugins in `folders`: a folder with `init.lua` is one, named after the folder;
    /// another folder holds one per subfolder with an `init.lua`.
    /// - Throws: `HostError` naming a folder that is missing or holds no plugin.
    package static func plugins(in folders: [String]) throws -> [Plugin] {
        let fm = FileManager.default
        var found: [Plugin] = []
        func plugin(_ folder: String) -> Plugin? {
            guard fm.fileExists(atPath: (folder as NSString).appendingPathComponent("init.lua")),
                let real = FolderWalk.realPath(folder)
            else { return nil }
            let name = (real as NSString).lastPathComponent
            return Plugin(name: name, folder: folder, real: real)
        }
        for folder in folders {
            var isFolder: ObjCBool = false
            guard fm.fileExists(atPath: folder, isDirectory: &isFolder), isFolder.boolValue else {
                throw HostError("\(folder) is not a folder; give plugin folders (with init.lua) or folders of them")
            }
            if let one = plugin(folder) { found.append(one); continue }
            let inside = ((try? fm.contentsOfDirectory(atPath: folder)) ?? []).sorted()
                .compactMap { plugin((folder as NSString).appendingPathComponent($0)) }
            guard !inside.isEmpty else {
                throw HostError("\(folder) holds no plugin: neither \(folder)/init.lua nor \(folder)/NAME/init.lua")
            }
            found += inside
        }
        for (i, p) in found.enumerated() where found[..<i].contains(where: { $0.name == p.name }) {
            throw HostError(
                "two plugins are named '\(p.name)' (\(found.first { $0.name == p.name }!.folder) and \(p.folder)); serve one of them"
            )
        }
        return found
    }

    /// Every `.lua` file of `plugins` now, by `PLUGIN/PATH`.
    package static func files(of plugins: [Plugin]) -> [String: String] {
        var out: [String: String] = [:]
        for plugin in plugins {
            for relative in FolderWalk.paths(under: plugin.real) where relative.hasSuffix(".lua") {
                let key = "\(plugin.name)/\(relative)"
                if case .success(let text) = file(key, in: [plugin]) { out[key] = text }
            }
        }
        return out
    }

    /// Why a file is not served.
    package enum Refusal: Error, Equatable {
        case forbidden(String)
        case notFound(String)
    }

    /// The text of `path` (`counter/init.lua`) when it is a file the server serves.
    package func file(_ path: String) -> Result<String, Refusal> { DevServer.file(path, in: plugins) }

    static func file(_ path: String, in plugins: [Plugin]) -> Result<String, Refusal> {
        // The file system stops at a NUL (`notes.txt%00.lua` would pass the .lua check and
        // open notes.txt): no control byte at all, decoded or not.
        guard !path.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            return .failure(
                .forbidden(
                    "\(LuaValue.escaped(path)): a path with a control character (a NUL, a newline) is not served"))
        }
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count >= 2, parts.allSatisfy({ !$0.isEmpty && !$0.hasPrefix(".") }), path.hasSuffix(".lua") else {
            return .failure(
                .forbidden("\(path): only .lua files of the served plugins, as PLUGIN/PATH without . or .. parts"))
        }
        guard let plugin = plugins.first(where: { $0.name == parts[0] }) else {
            return .failure(
                .notFound("no plugin '\(parts[0])' here; served: \(plugins.map(\.name).joined(separator: ", "))"))
        }
        let full = (plugin.real as NSString).appendingPathComponent(parts.dropFirst().joined(separator: "/"))
        guard let real = FolderWalk.realPath(full) else { return .failure(.notFound("\(path): no such file")) }
        guard real.hasPrefix(plugin.real + "/") else {
            return .failure(.forbidden("\(path) leads outside the folder \(plugin.folder); it is not served"))
        }
        guard let text = try? String(contentsOfFile: real, encoding: .utf8) else {
            return .failure(.notFound("\(path): not readable as text"))
        }
        return .success(text)
    }

    /// Takes the files as they are now: the ones that differ from the last published are
    /// pushed to every connected app, and returned (none: nothing is sent).
    @discardableResult
    package func publish(_ now: [String: String]) -> [String] {
        lock.withLock { push(now) }
    }

    /// Takes the files a save changed (nil: removed) and publishes the set they make with
    /// the others as last published; returns those that differ.
    @discardableResult
    package func publish(updating changes: [String: String?]) -> [String] {
        lock.withLock {
            var now = files
            for (path, text) in changes { now[path] = text }
            return push(now)
        }
    }

    /// `publish`, under the lock.
    private func push(_ now: [String: String]) -> [String] {
        let changed = Set(files.keys).union(now.keys).filter { files[$0] != now[$0] }.sorted()
        guard !changed.isEmpty else { return [] }
        files = now
        let message = DevServerMessages.files(now, changed: changed)
        for connection in connections.values { connection.send(message) }
        return changed
    }

    // MARK: - Apps

    private func addRoutes(to router: Router<BasicWebSocketRequestContext>, server: InspectorServer) {
        router.get("/files/**") { [self] request, _ -> Response in
            if let message = server.refusal(
                authority: request.head.authority, token: request.uri.queryParameters.get("token"),
                origins: [], upgrade: false)
            {
                throw HTTPError(.forbidden, message: message)
            }
            let raw = String(request.uri.path.dropFirst("/files/".count))
            // A path that does not decode is refused, not served as its raw text.
            guard let path = raw.removingPercentEncoding else {
                throw HTTPError(.forbidden, message: "\(raw): not a path (its percent escapes do not decode)\n")
            }
            switch file(path) {
            case .success(let text):
                var headers = HTTPFields()
                headers[.contentType] = "text/plain; charset=utf-8"
                return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
            case .failure(.forbidden(let why)): throw HTTPError(.forbidden, message: why + "\n")
            case .failure(.notFound(let why)): throw HTTPError(.notFound, message: why + "\n")
            }
        }
        server.webSocket(
            DevServerMessages.appPath, on: router, queueLimit: DevServer.appQueueBytes,
            maxSize: DevServer.appMessageBytes
        ) { [weak self] queue in
            guard let self, let id = self.connect(send: { queue.push($0) }) else {
                queue.finish()
                return ({ _ in }, {})
            }
            return ({ await self.receive($0, from: id) }, { await self.disconnect(id) })
        }
    }

    /// An app connected: it gets every file first. Nil past `appLimit` apps.
    private func connect(send: @escaping @Sendable (String) -> Void) -> Int? {
        lock.withLock {
            guard connections.count < DevServer.appLimit else { return nil }
            let id = nextConnection
            nextConnection += 1
            connections[id] = Connection(send: send)
            send(DevServerMessages.files(files, changed: nil))
            return id
        }
    }

    private func disconnect(_ id: Int) async {
        let (left, pruned) = lock.withLock { () -> (Connection?, [Session]) in
            guard let closed = connections.removeValue(forKey: id) else { return (nil, []) }
            // The app's last connection: its sessions stay until it is gone for good (`prune`).
            guard !closed.appID.isEmpty, !connections.values.contains(where: { $0.appID == closed.appID }) else {
                return (closed, [])
            }
            gone.append((closed.appID, closed.app))
            return (closed, prune { _ in false })
        }
        for session in pruned { await session.close() }
        guard let left else { return }
        log("\(left.app) went away; it keeps running its last code and connects again when it can")
    }

    /// Takes out the sessions of the gone apps `ends` picks, and of the oldest past
    /// `keptGoneApps`. Under the lock; the caller closes what it returns, outside it.
    private func prune(_ ends: ((id: String, name: String)) -> Bool) -> [Session] {
        var ended = gone.filter(ends).map(\.id)
        gone.removeAll { ends($0) }
        if gone.count > DevServer.keptGoneApps {
            ended += gone.prefix(gone.count - DevServer.keptGoneApps).map(\.id)
            gone.removeFirst(gone.count - DevServer.keptGoneApps)
        }
        var out: [Session] = []
        for key in sessions.keys where ended.contains(where: { key.hasPrefix($0 + "/") }) {
            out.append(sessions.removeValue(forKey: key)!)
        }
        return out
    }

    /// `--debug`: the apps' `dap` messages (their JSON text) go to `handler` from now on.
    func relayDebugMessages(to handler: @escaping @Sendable (String) -> Void) {
        lock.withLock { debugMessages = handler }
    }

    /// Sends a line to the app that connected last (and said who it is); false when none is.
    func sendToLatestApp(_ line: String) -> Bool {
        lock.withLock {
            guard let latest = connections.filter({ !$0.value.appID.isEmpty }).max(by: { $0.key < $1.key }) else {
                return false
            }
            latest.value.send(line)
            return true
        }
    }

    /// One message from an app. Called on its connection's reader, one at a time, on a Swift
    /// concurrency thread: nothing here waits on a lock while doing anything that waits (making
    /// a feature's observers starts an inspector's server, awaited).
    private func receive(_ text: String, from id: Int) async {
        guard let message = DevServerMessages.read(text) else { return }
        if message.m == "dap" {
            lock.withLock { debugMessages }?(text)
            return
        }
        if message.m == "hello" {
            let name = message.object["name"]?.stringValue ?? "app"
            let appID = message.object["app"]?.stringValue ?? ""
            let pruned = lock.withLock { () -> [Session] in
                connections[id]?.app = name
                connections[id]?.appID = appID
                // Back: its sessions are its own again. Another of the same name: a restart.
                gone.removeAll { $0.id == appID }
                return prune { $0.name == name }
            }
            for session in pruned { await session.close() }
            log("\(name) connected")
            return
        }
        guard let f = message.feature, let connection = lock.withLock({ connections[id] }) else { return }
        let key = "\(connection.appID)/\(f)"
        guard let pipe = try? InspectorPipe.toChild(text) else { return }
        switch pipe {
        case let .started(name, version, path, actions, clock):
            let folder = plugins.first { $0.name == path }?.folder ?? path
            let run = RunDescription(
                name: name, version: version, path: folder, actions: InspectorPipe.schema(actions), clock: clock)
            var session = lock.withLock { sessions[key] }
            if session == nil {
                let box = Locked<Int?>(nil)
                let dispatcher = RemoteDispatcher(timeout: 10) { [weak self] command in
                    guard let self, let to = box.withLock({ $0 }) else { return }
                    let line = InspectorPipe.line(command, feature: f)
                    _ = self.lock.withLock { self.connections[to]?.send(line) }
                }
                // Made outside the lock: it starts a server, which takes a moment and a thread.
                let (observers, close) = await observers(connection.app, run)
                let made = Session(observers: observers, close: close, dispatcher: dispatcher, connection: box)
                let kept = lock.withLock { () -> Session in
                    if let known = sessions[key] { return known }
                    sessions[key] = made
                    return made
                }
                if kept !== made { await close() }
                session = kept
            }
            guard let session else { return }
            session.connection.withLock { $0 = id }
            for observer in session.observers { observer.started(run, dispatch: session.dispatcher) }
        case let .event(event, t, cause, causeID):
            for observer in lock.withLock({ sessions[key]?.observers }) ?? [] {
                observer.observe(event, t: t, cause: cause, causeID: causeID)
            }
        case let .input(action, t):
            for observer in lock.withLock({ sessions[key]?.observers }) ?? [] { observer.input(action, t: t) }
        case let .answered(answer):
            for observer in lock.withLock({ sessions[key]?.observers }) ?? [] { observer.answered(answer) }
        case let .reply(replyID, failure, flights):
            lock.withLock { sessions[key]?.dispatcher }?.answer(id: replyID, message: failure, flights: flights)
        }
    }
}
