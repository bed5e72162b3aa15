import Foundation
import Hummingbird
import HummingbirdWebSocket
import LuaKit
import MoonflowEvents
import MoonflowHost
import MoonflowLua
import NIOCore
#if canImport(Glibc)
import Glibc
#endif

/// `moonflow serve`'s server: plugin folders served to apps' hosts over HTTP and WebSocket
/// (`DevLink` is the protocol), each save pushed to every connected app, and each feature an
/// app runs handed to observers (what prints it, records it, inspects it) as a run of
/// `moonflow run` is.
///
///     let server = try DevServer(folders: ["plugins"]) { app, run in [printer] }
///     let url = try server.start()                  // http://127.0.0.1:8377/?token=…
///     server.publish(DevServer.files(of: server.plugins))   // after a save
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
    private let web: Box<InspectorServer?> = Box(nil)

    /// The observers of one feature an app runs, made when the app starts it: `app` is the
    /// app's process name, `run.path` the plugin's folder here (what `moonflow replay` loads).
    package typealias Observers = @Sendable (_ app: String, _ run: RunDescription) -> [any RunObserver]

    private struct Connection {
        let send: @Sendable (String) -> Void
        var app = "app"
        var appID = ""
    }

    private final class Session: @unchecked Sendable {
        let observers: [any RunObserver]
        let dispatcher: RemoteDispatcher
        /// Which connection the session's commands go to now (the app's latest).
        let connection: Box<Int?>
        init(observers: [any RunObserver], dispatcher: RemoteDispatcher, connection: Box<Int?>) {
            self.observers = observers
            self.dispatcher = dispatcher
            self.connection = connection
        }
    }

    private let lock = NSLock()
    private var files: [String: String]
    private var connections: [Int: Connection] = [:]
    private var nextConnection = 0
    private var sessions: [String: Session] = [:]
    private let observers: Observers
    private let log: @Sendable (String) -> Void

    /// - Parameters:
    ///   - folders: plugin folders (with `init.lua`) or folders of them.
    ///   - log: where to say that an app connected or went away.
    /// - Throws: `HostError` naming a folder that holds no plugin.
    package init(folders: [String], host: String = "127.0.0.1", port: Int = 0, token: String = InspectorServer.makeToken(),
                log: @escaping @Sendable (String) -> Void = { _ in }, observers: @escaping Observers) throws {
        plugins = try DevServer.plugins(in: folders)
        files = DevServer.files(of: plugins)
        self.observers = observers
        self.log = log
        web.withLock {
            $0 = InspectorServer(routes: { [weak self] router, server in self?.addRoutes(to: router, server: server) },
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

    /// Apps connected now.
    package var appCount: Int { lock.withLock { connections.count } }

    // MARK: - Files

    /// The plugins in `folders`: a folder with `init.lua` is one, named after the folder;
    /// another folder holds one per subfolder with an `init.lua`.
    /// - Throws: `HostError` naming a folder that is missing or holds no plugin.
    package static func plugins(in folders: [String]) throws -> [Plugin] {
        let fm = FileManager.default
        var found: [Plugin] = []
        func plugin(_ folder: String) -> Plugin? {
            guard fm.fileExists(atPath: (folder as NSString).appendingPathComponent("init.lua")), let real = FolderWalk.realPath(folder) else { return nil }
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
            throw HostError("two plugins are named '\(p.name)' (\(found.first { $0.name == p.name }!.folder) and \(p.folder)); serve one of them")
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
            return .failure(.forbidden("\(LuaValue.escaped(path)): a path with a control character (a NUL, a newline) is not served"))
        }
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count >= 2, parts.allSatisfy({ !$0.isEmpty && !$0.hasPrefix(".") }), path.hasSuffix(".lua") else {
            return .failure(.forbidden("\(path): only .lua files of the served plugins, as PLUGIN/PATH without . or .. parts"))
        }
        guard let plugin = plugins.first(where: { $0.name == parts[0] }) else {
            return .failure(.notFound("no plugin '\(parts[0])' here; served: \(plugins.map(\.name).joined(separator: ", "))"))
        }
        let full = (plugin.real as NSString).appendingPathComponent(parts.dropFirst().joined(separator: "/"))
        guard let real = FolderWalk.realPath(full) else { return .failure(.notFound("\(path): no such file")) }
        guard real.hasPrefix(plugin.real + "/") else {
            return .failure(.forbidden("\(path) leads outside the folder \(plugin.folder); it is not served"))
        }
        guard let text = try? String(contentsOfFile: real, encoding: .utf8) else { return .failure(.notFound("\(path): not readable as text")) }
        return .success(text)
    }

    /// Takes the files as they are now: the ones that differ from the last published are
    /// pushed to every connected app, and returned (none: nothing is sent).
    @discardableResult
    package func publish(_ now: [String: String]) -> [String] {
        lock.withLock {
            let changed = Set(files.keys).union(now.keys).filter { files[$0] != now[$0] }.sorted()
            guard !changed.isEmpty else { return [] }
            files = now
            let message = DevLink.files(now, changed: changed)
            for connection in connections.values { connection.send(message) }
            return changed
        }
    }

    // MARK: - Apps

    private func addRoutes(to router: Router<BasicWebSocketRequestContext>, server: InspectorServer) {
        router.get("/files/**") { [self] request, _ -> Response in
            if let message = server.refusal(authority: request.head.authority, token: request.uri.queryParameters.get("token"),
                                            origins: [], upgrade: false) {
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
        server.webSocket(DevLink.appPath, on: router, queueLimit: 1 << 30, maxSize: 64 << 20) { [weak self] queue in
            guard let self else { return ({ _ in }, {}) }
            let id = self.connect(send: { queue.push($0) })
            return ({ self.receive($0, from: id) }, { self.disconnect(id) })
        }
    }

    /// An app connected: it gets every file first.
    private func connect(send: @escaping @Sendable (String) -> Void) -> Int {
        lock.withLock {
            let id = nextConnection
            nextConnection += 1
            connections[id] = Connection(send: send)
            send(DevLink.files(files, changed: nil))
            return id
        }
    }

    private func disconnect(_ id: Int) {
        guard let gone = lock.withLock({ connections.removeValue(forKey: id) }) else { return }
        log("\(gone.app) went away; it keeps running its last code and connects again when it can")
    }

    /// One message from an app. Called on its connection's reader, one at a time.
    private func receive(_ text: String, from id: Int) {
        guard let message = DevLink.read(text) else { return }
        if message.m == "hello" {
            let name = message.object["name"]?.stringValue ?? "app"
            lock.withLock {
                connections[id]?.app = name
                connections[id]?.appID = message.object["app"]?.stringValue ?? ""
            }
            log("\(name) connected")
            return
        }
        guard let f = message.feature, let connection = lock.withLock({ connections[id] }) else { return }
        let key = "\(connection.appID)/\(f)"
        guard let pipe = try? InspectorPipe.toChild(text) else { return }
        switch pipe {
        case let .started(name, version, path, actions, clock):
            let folder = plugins.first { $0.name == path }?.folder ?? path
            let run = RunDescription(name: name, version: version, path: folder, actions: InspectorPipe.schema(actions), clock: clock)
            let session = lock.withLock { () -> Session in
                if let known = sessions[key] { return known }
                let box = Box<Int?>(nil)
                let dispatcher = RemoteDispatcher(timeout: 10) { [weak self] command in
                    guard let self, let to = box.withLock({ $0 }) else { return }
                    let line = DevLink.tagged(InspectorPipe.line(command), feature: f)
                    _ = self.lock.withLock { self.connections[to]?.send(line) }
                }
                let made = Session(observers: observers(connection.app, run), dispatcher: dispatcher, connection: box)
                sessions[key] = made
                return made
            }
            session.connection.withLock { $0 = id }
            for observer in session.observers { observer.started(run, dispatch: session.dispatcher) }
        case let .event(event, t, cause, causeID):
            for observer in lock.withLock({ sessions[key]?.observers }) ?? [] { observer.observe(event, t: t, cause: cause, causeID: causeID) }
        case let .input(action, t):
            for observer in lock.withLock({ sessions[key]?.observers }) ?? [] { observer.input(action, t: t) }
        case let .answered(answer):
            for observer in lock.withLock({ sessions[key]?.observers }) ?? [] { observer.answered(answer) }
        case let .reply(replyID, failure, flights):
            lock.withLock { sessions[key]?.dispatcher }?.answer(id: replyID, message: failure, flights: flights)
        }
    }
}
