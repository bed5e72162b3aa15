import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import MoonflowEvents
import MoonflowHost
import LuaKit
import MoonflowLua
import NIOCore
import NIOHTTP1
import Streams

/// `moonflow run --inspect`: serves the inspector's page at `/` and its
/// protocol at `/ws` (Hummingbird with its WebSocket module), both behind a
/// random token in the URL.
///
///     let server = InspectorServer(hub: hub, host: "127.0.0.1", port: 0)
///     let url = try server.start()   // http://127.0.0.1:40123/?token=...
///
/// Loopback unless another host is given. Every request must name this server
/// in `Host` (loopback's names, or exactly the host given): another site's name
/// pointed at this machine (DNS rebinding) gets 403. A request without the token
/// gets 403; a WebSocket upgrade from a page of another origin gets 403 too, so
/// another site open in the same browser cannot read the run or send it actions.
/// Upgrades are checked before Hummingbird's WebSocket upgrade sees them
/// (`UpgradeGuard`), which would answer a refusal with a bare 400.
public final class InspectorServer: Sendable {
    public let hub: InspectorHub
    public let host: String
    public let requestedPort: Int
    /// The secret every request must carry as `?token=`.
    public let token: String
    private let bound = Locked<Int?>(nil)

    /// Where the person opening the page finds its URL, as a refused request names it:
    /// "open the URL \(shownBy)".
    public let shownBy: String

    /// - Parameter shownBy: where the page's URL is shown, for the refusals of requests
    ///   without the token or for another host (`moonflow run --inspect` says
    ///   "that moonflow run --inspect printed").
    public convenience init(
        hub: InspectorHub, host: String = "127.0.0.1", port: Int = 0, token: String = InspectorServer.makeToken(),
        shownBy: String = "the inspector was started with"
    ) {
        self.init(
            hub: hub, host: host, port: port, token: token, shownBy: shownBy, connectionLimits: ConnectionLimits())
    }

    /// - Parameter connectionLimits: how many connections at once, and how long one may take
    ///   to show the token.
    package init(
        hub: InspectorHub, host: String = "127.0.0.1", port: Int = 0, token: String = InspectorServer.makeToken(),
        shownBy: String = "the inspector was started with", connectionLimits: ConnectionLimits
    ) {
        self.hub = hub
        self.host = host
        self.requestedPort = port
        self.token = token
        self.shownBy = shownBy
        self.routes = nil
        self.connectionLimits = connectionLimits
    }

    /// What one server takes from the network before it knows who is asking.
    package struct ConnectionLimits: Sendable {
        /// Connections open at once (pages, apps, requests): one more is closed at once.
        package var connections = 256
        /// A connection whose first request has not shown the token by then is closed,
        /// as is one still sending its first request line or head (a slow client).
        package var authentication: TimeAmount = .seconds(10)
        /// The longest request line (method, URI, version) taken: a longer one gets 414.
        package var requestLine = 8192
        /// A connection that showed the token and then sends nothing for this long (no
        /// WebSocket: those stay open) is closed.
        package var idle: TimeAmount = .seconds(120)
        package init() {}
    }
    let connectionLimits: ConnectionLimits
    /// Connections open now, against `connectionLimits.connections`.
    private let openConnections = Locked(0)
    package var connectionCount: Int { openConnections.withLock { $0 } }

    /// What a server with other routes than the page's adds to its router (the dev server's);
    /// it is behind the same checks: `Host`, the token, and a WebSocket upgrade's origin.
    package typealias Routes =
        @Sendable (_ router: Router<BasicWebSocketRequestContext>, _ server: InspectorServer) -> Void
    private let routes: Routes?

    /// A server with `routes` instead of the page's (`hub` is then not served).
    package init(
        routes: @escaping Routes, host: String, port: Int, token: String, shownBy: String,
        connectionLimits: ConnectionLimits = ConnectionLimits()
    ) {
        self.hub = InspectorHub()
        self.host = host
        self.requestedPort = port
        self.token = token
        self.shownBy = shownBy
        self.routes = routes
        self.connectionLimits = connectionLimits
    }

    /// 32 random hex digits.
    public static func makeToken() -> String {
        var rng = SystemRandomNumberGenerator()
        return (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &rng)) }.joined()
    }

    /// Parses `HOST:PORT`, `:PORT` or `PORT` (host 127.0.0.1).
    /// - Throws: `HostError` naming the text and saying what an address looks like.
    public static func address(_ text: String) throws -> (host: String, port: Int) {
        try InspectorPipe.address(text)
    }

    /// The page's address once started. Listening on every address (`0.0.0.0`, `::`), it
    /// names one of this machine's own (a device on the network can open it), loopback when
    /// the machine has no other.
    public var url: String? {
        bound.withLock { $0 }.map { "http://\(MachineAddresses.bracketed(shownHost)):\($0)/?token=\(token)" }
    }

    /// The host the URL names: the one given, or for every address one of the machine's own.
    private var shownHost: String {
        MachineAddresses.isWildcard(host) ? MachineAddresses.reachable(preferringIPv6: host.contains(":")) : host
    }

    /// The running server, to stop it.
    private let running = Locked<Task<Void, Never>?>(nil)

    /// Starts serving on a background task and waits until the port is bound. It blocks the
    /// calling thread on work Swift concurrency's threads do: call it from a thread of your
    /// own (a program's main thread), never from a task; there, `await start()`.
    /// - Returns: the page's URL, with the token.
    /// - Throws: `HostError` naming the address when it cannot be bound.
    @discardableResult
    public func start() throws -> String {
        let ready = DispatchSemaphore(value: 0)
        let result = Locked<Result<String, HostError>?>(nil)
        launch { outcome in
            result.withLock { $0 = outcome }
            ready.signal()
        }
        ready.wait()
        return try result.withLock { $0! }.get()
    }

    /// Starts serving and returns once the port is bound, without holding a thread meanwhile.
    /// - Returns: the page's URL, with the token.
    /// - Throws: `HostError` naming the address when it cannot be bound.
    @discardableResult
    package func start() async throws -> String {
        try await withCheckedThrowingContinuation { (c: CheckedContinuation<String, any Error>) in
            launch { c.resume(with: $0.mapError { $0 as any Error }) }
        }
    }

    /// Runs the server on a task of its own; `done` is called once, when the port is bound
    /// (with the URL) or the server cannot run.
    private func launch(_ done: @escaping @Sendable (Result<String, HostError>) -> Void) {
        let called = Locked(false)
        let finish: @Sendable (Result<String, HostError>) -> Void = { outcome in
            if called.withLock({ c -> Bool in
                defer { c = true }; return !c
            }) {
                done(outcome)
            }
        }
        let app = makeApplication { [bound, self] port in
            bound.withLock { $0 = port }
            finish(.success(url!))
        }
        let address = "\(host):\(requestedPort)"
        let task = Task.detached {
            do {
                try await app.run()
                finish(.failure(HostError("\(address): the server stopped before it listened")))
            } catch {
                finish(
                    .failure(
                        HostError(
                            "\(address): cannot listen there (\(error)); pick another port, or :0 for any free one")))
            }
        }
        running.withLock { $0 = task }
    }

    /// Stops serving: the port is closed, and every connection with it. Returns once done.
    package func stop() async {
        guard
            let task = running.withLock({ t -> Task<Void, Never>? in
                defer { t = nil }; return t
            })
        else { return }
        task.cancel()
        await task.value
    }

    /// The `HOST:PORT` names a request may give in `Host` (lowercase): loopback's,
    /// and the host given to `--inspect` when it is another; listening on every address
    /// (`0.0.0.0`, `::`), each of this machine's own addresses and its host name too.
    public var authorities: [String] { authorities(port: bound.withLock { $0 } ?? requestedPort) }

    func authorities(port: Int) -> [String] {
        var names = ["127.0.0.1", "localhost", "[::1]"]
        var others = [MachineAddresses.bracketed(host).lowercased()]
        if MachineAddresses.isWildcard(host) {
            others += MachineAddresses.current().map { MachineAddresses.bracketed($0).lowercased() }
        }
        for name in others where !names.contains(name) { names.append(name) }
        return names.map { "\($0):\(port)" }
    }

    /// Whether `given` is `token`, in time that does not depend on where they differ (a
    /// byte-by-byte `==` stops at the first difference, which a timing attacker can find).
    static func sameToken(_ given: String, _ token: String) -> Bool {
        let a = Array(given.utf8), b = Array(token.utf8)
        var difference: UInt8 = a.count == b.count ? 0 : 1
        for i in 0..<b.count { difference |= (i < a.count ? a[i] : 0) ^ b[i] }
        return difference == 0
    }

    /// Why a request is refused (403), or nil. `origins` are its `Origin` headers;
    /// only WebSocket upgrades are checked against them.
    package func refusal(authority: String?, token given: String?, origins: [String], upgrade: Bool) -> String? {
        let allowed = authorities
        guard let authority, allowed.contains(authority.lowercased()) else {
            return
                "the inspector answers only requests for \(allowed.joined(separator: ", ")), not \(authority.map { "Host \($0)" } ?? "no Host header"); open the URL \(shownBy)\n"
        }
        guard let given, InspectorServer.sameToken(given, token) else {
            return "this inspector needs the token from its URL: open the whole URL \(shownBy) (…/?token=…)\n"
        }
        // A browser always names the page's origin (http, https, file, an extension's
        // scheme or null); clients that are not browsers send none or a ws:// one,
        // which no page can send.
        if upgrade {
            let pages = allowed.map { "http://\($0)" }
            for origin in origins where !pages.contains(origin.lowercased()) {
                let scheme = origin.lowercased().prefix { $0 != ":" }
                if scheme == "ws" || scheme == "wss" { continue }
                return
                    "the inspector takes WebSocket connections only from its own page (origin \(pages.joined(separator: ", "))), not from \(origin)\n"
            }
        }
        return nil
    }

    /// The page at `/` and its protocol at `/ws`, for `hub`.
    private func addPageRoutes(to router: Router<BasicWebSocketRequestContext>) {
        let hub = hub
        router.get("/") { [self] request, _ -> Response in
            if let message = refusal(
                authority: request.head.authority, token: request.uri.queryParameters.get("token"),
                origins: [], upgrade: false)
            {
                throw HTTPError(.forbidden, message: message)
            }
            var headers = HTTPFields()
            headers[.contentType] = "text/html; charset=utf-8"
            headers[.cacheControl] = "no-store"
            return Response(
                status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: InspectorPage.html)))
        }
        // Frames wait in the queue until the socket takes them; a page that falls `limits.bytes`
        // behind is dropped (closing the handler closes the socket) and, reconnecting, resyncs
        // from the window.
        webSocket("/ws", on: router, queueLimit: hub.limits.bytes, maxSize: 16 << 20) { queue in
            let page = hub.connect { queue.push($0) }
            return ({ hub.receive($0, from: page) }, { hub.disconnect(page) })
        }
    }

    /// A WebSocket route behind the server's checks: `open` is called with the connection's
    /// queue of frames out (what it pushes is written in order; past `queueLimit` bytes not yet
    /// written the connection ends) and returns what to do with each text frame that comes in
    /// (a binary one comes as the text "binary frame") and when the connection ends. Both run on
    /// Swift concurrency's threads: they may await, and must not block on anything that needs
    /// another of those threads.
    package func webSocket(
        _ path: String, on router: Router<BasicWebSocketRequestContext>, queueLimit: Int, maxSize: Int,
        open:
            @escaping @Sendable (SendQueue) -> (
                receive: @Sendable (String) async -> Void, close: @Sendable () async -> Void
            )
    ) {
        router.ws(
            RouterPath(stringLiteral: path),
            shouldUpgrade: { [self] request, _ in
                // UpgradeGuard answered a refusal already; this holds if it is ever bypassed.
                if refusal(
                    authority: request.head.authority, token: request.uri.queryParameters.get("token"),
                    origins: request.headers[values: .origin], upgrade: true) != nil
                {
                    return .dontUpgrade
                }
                return .upgrade([:])
            },
            onUpgrade: { inbound, outbound, _ in
                let queue = SendQueue(limit: queueLimit)
                let (receive, close) = open(queue)
                await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        for await frame in queue.frames where !queue.isClosed {
                            try await outbound.write(.text(frame))
                            queue.written(frame)
                        }
                    }
                    group.addTask {
                        for try await message in inbound.messages(maxSize: maxSize) {
                            switch message {
                            case .text(let text): await receive(text)
                            case .binary: await receive("binary frame")
                            }
                        }
                    }
                    group.addTask {
                        await queue.overflow()
                        throw CancellationError()
                    }
                    // The other side left, or fell too far behind: the rest stops with it.
                    _ = try? await group.next()
                    queue.finish()
                    group.cancelAll()
                }
                await close()
            })
    }

    private func makeApplication(onBound: @escaping @Sendable (Int) -> Void) -> some ApplicationProtocol {
        let router = Router(context: BasicWebSocketRequestContext.self)
        if let routes { routes(router, self) } else { addPageRoutes(to: router) }
        var logger = Logger(label: "moonflow.inspector")
        logger.logLevel = .critical
        let webSocketResponder = router.buildResponder()
        // Frames up to 16 MB: a page may send a large action.
        let configuration = HTTP1WebSocketUpgradeChannel.Configuration(
            http1: .init(idleTimeout: connectionLimits.idle),
            ws: .init(maxFrameSize: 16 << 20))
        let limits = connectionLimits, open = openConnections
        let server = HTTPServerBuilder { [self] responder in
            GuardedChannel(
                inner: HTTP1WebSocketUpgradeChannel(
                    responder: responder, webSocketResponder: webSocketResponder, configuration: configuration),
                limits: limits, open: open
            ) { head in
                let query = URLComponents(string: head.uri)?.queryItems
                return self.refusal(
                    authority: head.headers.first(name: "host"), token: query?.first { $0.name == "token" }?.value,
                    origins: head.headers["origin"], upgrade: head.headers.contains(name: "upgrade"))
            }
        }
        return Application(
            router: router,
            server: server,
            configuration: .init(address: .hostname(host, port: requestedPort), serverName: "moonflow"),
            onServerRunning: { channel in onBound(channel.localAddress?.port ?? 0) },
            logger: logger
        )
    }
}

/// Hummingbird's HTTP and WebSocket channel with `ConnectionGuard` first (before the HTTP
/// decoder) and `UpgradeGuard` in front of its upgrade handler.
private struct GuardedChannel: ServerChildChannel {
    let inner: HTTP1WebSocketUpgradeChannel
    let limits: InspectorServer.ConnectionLimits
    let open: Locked<Int>
    let refusal: @Sendable (HTTPRequestHead) -> String?

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<HTTP1WebSocketUpgradeChannel.Value> {
        inner.setup(channel: channel, logger: logger).flatMapThrowing { value in
            let connection = ConnectionGuard(limits: limits, open: open)
            try channel.pipeline.syncOperations.addHandler(connection, position: .first)
            let decoder = try channel.pipeline.syncOperations.context(
                handlerType: ByteToMessageHandler<HTTPRequestDecoder>.self)
            try channel.pipeline.syncOperations.addHandler(
                UpgradeGuard(refusal: refusal, connection: connection), position: .after(decoder.handler))
            return value
        }
    }

    func handle(value: HTTP1WebSocketUpgradeChannel.Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }
}

/// Sees a connection's first request: a WebSocket upgrade that `refusal` refuses is
/// answered 403 with the reason and the connection closed; anything else passes on,
/// and the guard leaves the pipeline (no later request on the connection can upgrade).
/// A first request that passes the checks (the token, `Host`) tells `connection` so.
private final class UpgradeGuard: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let refusal: @Sendable (HTTPRequestHead) -> String?
    let connection: ConnectionGuard
    private var refused = false

    init(refusal: @escaping @Sendable (HTTPRequestHead) -> String?, connection: ConnectionGuard) {
        self.refusal = refusal
        self.connection = connection
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refused else { return }  // the rest of a refused request
        guard case .head(let head) = unwrapInboundIn(data) else {
            context.fireChannelRead(data)
            return
        }
        let message = refusal(head)
        if message == nil { connection.authenticated() }
        guard head.headers.contains(name: "upgrade"), let message else {
            context.fireChannelRead(data)
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
            return
        }
        refused = true
        var headers = HTTPHeaders()
        headers.add(name: "content-type", value: "text/plain; charset=utf-8")
        headers.add(name: "content-length", value: String(message.utf8.count))
        headers.add(name: "connection", value: "close")
        context.write(
            wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: .forbidden, headers: headers))),
            promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: message)))), promise: nil)
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in bound.value.close(promise: nil) }
    }
}

/// First in every connection's pipeline, on its raw bytes: at most `limits.connections` open
/// at once (one more is closed at once); a first request line longer than
/// `limits.requestLine` gets 414 and the connection is closed (the HTTP decoder would wait
/// for 80 KB and then close without a word); and a connection whose first request has not
/// passed the checks (`authenticated`, told by `UpgradeGuard`) within
/// `limits.authentication` is closed, so a client without the token, or one that sends its
/// request a byte at a time, holds no descriptor and no buffer for long.
private final class ConnectionGuard: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let limits: InspectorServer.ConnectionLimits
    private let open: Locked<Int>
    // Used on the connection's event loop only.
    private var counted = false
    private var started = false
    private var known = false
    private var lineBytes = 0
    private var lineDone = false
    private var deadline: Scheduled<Void>?

    init(limits: InspectorServer.ConnectionLimits, open: Locked<Int>) {
        self.limits = limits
        self.open = open
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { begin(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        begin(context)
        context.fireChannelActive()
    }

    private func begin(_ context: ChannelHandlerContext) {
        guard !started else { return }
        started = true
        let limit = limits.connections
        counted = open.withLock { n -> Bool in
            guard n < limit else { return false }
            n += 1
            return true
        }
        guard counted else { context.close(promise: nil); return }
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        deadline = context.eventLoop.scheduleTask(in: limits.authentication) { [self] in
            if !known { bound.value.close(promise: nil) }
        }
    }

    /// The first request passed the checks: the connection may stay.
    func authenticated() {
        known = true
        deadline?.cancel()
        deadline = nil
    }

    /// A client that closed its side before it showed the token has nothing more to say.
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event, !known {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
        if counted {
            counted = false
            open.withLock { $0 -= 1 }
        }
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard counted else { return }
        if !lineDone {
            let buffer = unwrapInboundIn(data)
            if let newline = buffer.readableBytesView.firstIndex(of: UInt8(ascii: "\n")) {
                lineBytes += newline - buffer.readerIndex
                lineDone = true
            } else {
                lineBytes += buffer.readableBytes
            }
            if lineBytes > limits.requestLine {
                lineDone = true
                counted = false
                open.withLock { $0 -= 1 }
                let message = "a request line of at most \(limits.requestLine) bytes, please\n"
                let response =
                    "HTTP/1.1 414 URI Too Long\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: \(message.utf8.count)\r\nconnection: close\r\n\r\n"
                    + message
                let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
                context.writeAndFlush(NIOAny(ByteBuffer(string: response))).whenComplete { _ in
                    bound.value.close(promise: nil)
                }
                return
            }
        }
        context.fireChannelRead(data)
    }
}

/// A connection's frames not yet written, at most `limit` bytes of them: past that
/// the queue closes, `frames` ends and `overflow` returns.
package final class SendQueue: Sendable {
    private struct State {
        var pending = 0
        var over = false
        var waiter: CheckedContinuation<Void, Never>?
    }
    let frames: AsyncStream<String>
    private let continuation: AsyncStream<String>.Continuation
    private let state = Locked(State())
    let limit: Int

    init(limit: Int) {
        self.limit = limit
        (frames, continuation) = AsyncStream<String>.makeStream(bufferingPolicy: .unbounded)
    }

    /// Queues a frame; called under the hub's lock, so it never waits.
    package func push(_ frame: String) {
        enum Outcome { case queued, overflowed(CheckedContinuation<Void, Never>?), closed }
        let outcome = state.withLock { s -> Outcome in
            guard !s.over else { return .closed }
            s.pending += frame.utf8.count
            guard s.pending > limit else { return .queued }
            s.over = true
            defer { s.waiter = nil }
            return .overflowed(s.waiter)
        }
        switch outcome {
        case .queued: continuation.yield(frame)
        case .overflowed(let waiter):
            continuation.finish()
            waiter?.resume()
        case .closed: break
        }
    }

    /// Overflowed or finished: what is still queued is not written.
    var isClosed: Bool { state.withLock { $0.over } }

    func written(_ frame: String) { state.withLock { $0.pending -= frame.utf8.count } }

    /// Returns once the queue has overflowed (never, if it does not).
    func overflow() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                if s.over { return true }
                s.waiter = c
                return false
            }
            if now { c.resume() }
        }
    }

    /// The connection ended: nothing more is queued, and `overflow` returns.
    package func finish() {
        continuation.finish()
        let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
            s.over = true
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume()
    }
}
