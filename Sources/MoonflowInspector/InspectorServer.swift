import Foundation
import Hummingbird
import HummingbirdWebSocket
import MoonflowHost
import Logging
import NIOCore

/// `moonflow run --inspect`: serves the inspector's page at `/` and its
/// protocol at `/ws` (Hummingbird with its WebSocket module), both behind a
/// random token in the URL.
///
///     let server = InspectorServer(hub: hub, host: "127.0.0.1", port: 0)
///     let url = try server.start()   // http://127.0.0.1:40123/?token=...
///
/// Loopback unless another host is given. A request without the token gets 403;
/// a WebSocket upgrade from a page of another origin gets 403 too, so another
/// site open in the same browser cannot read the run or send it actions.
public final class InspectorServer: Sendable {
    public let hub: InspectorHub
    public let host: String
    public let requestedPort: Int
    /// The secret every request must carry as `?token=`.
    public let token: String
    private let bound = Box<Int?>(nil)

    public init(hub: InspectorHub, host: String = "127.0.0.1", port: Int = 0, token: String = InspectorServer.makeToken()) {
        self.hub = hub
        self.host = host
        self.requestedPort = port
        self.token = token
    }

    /// 32 random hex digits.
    public static func makeToken() -> String {
        var rng = SystemRandomNumberGenerator()
        return (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &rng)) }.joined()
    }

    /// Parses `HOST:PORT`, `:PORT` or `PORT` (host 127.0.0.1).
    /// - Throws: `HostError` saying what the address should look like.
    public static func address(_ text: String) throws -> (host: String, port: Int) {
        var host = "127.0.0.1", portText = text
        if let colon = text.lastIndex(of: ":") {
            let h = String(text[..<colon])
            if !h.isEmpty { host = h.hasPrefix("[") && h.hasSuffix("]") ? String(h.dropFirst().dropLast()) : h }
            portText = String(text[text.index(after: colon)...])
        }
        guard let port = Int(portText), (0...65535).contains(port) else {
            throw HostError("--inspect \(text): give HOST:PORT (127.0.0.1:8080), or :0 for any free port on loopback")
        }
        return (host, port)
    }

    /// The page's address once started.
    public var url: String? {
        bound.withLock { $0 }.map { "http://\(host.contains(":") ? "[\(host)]" : host):\($0)/?token=\(token)" }
    }

    /// Starts serving on a background task and waits until the port is bound.
    /// - Returns: the page's URL, with the token.
    /// - Throws: `HostError` naming the address when it cannot be bound.
    @discardableResult
    public func start() throws -> String {
        let ready = DispatchSemaphore(value: 0)
        let failure = Box<String?>(nil)
        let app = makeApplication { [bound] port in
            bound.withLock { $0 = port }
            ready.signal()
        }
        let address = "\(host):\(requestedPort)"
        Task.detached {
            do { try await app.run() } catch {
                failure.withLock { $0 = "\(error)" }
                ready.signal()
            }
        }
        ready.wait()
        if let message = failure.withLock({ $0 }) {
            throw HostError("--inspect \(address): cannot listen there (\(message)); pick another port, or :0 for any free one")
        }
        return url!
    }

    private func makeApplication(onBound: @escaping @Sendable (Int) -> Void) -> some ApplicationProtocol {
        let router = Router(context: BasicWebSocketRequestContext.self)
        let token = token, hub = hub
        router.get("/") { request, _ -> Response in
            try InspectorServer.checkToken(request, token)
            var headers = HTTPFields()
            headers[.contentType] = "text/html; charset=utf-8"
            headers[.cacheControl] = "no-store"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: InspectorPage.html)))
        }
        router.ws("/ws", shouldUpgrade: { request, _ in
            try InspectorServer.checkToken(request, token)
            try InspectorServer.checkOrigin(request)
            return .upgrade([:])
        }, onUpgrade: { inbound, outbound, _ in
            let (frames, continuation) = AsyncStream<String>.makeStream(bufferingPolicy: .unbounded)
            let page = hub.connect { continuation.yield($0) }
            defer { hub.disconnect(page) }
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await frame in frames { try await outbound.write(.text(frame)) }
                }
                for try await message in inbound.messages(maxSize: 16 << 20) {
                    switch message {
                    case .text(let text): hub.receive(text, from: page)
                    case .binary: hub.receive("binary frame", from: page)
                    }
                }
                continuation.finish()
                group.cancelAll()
            }
        })
        var logger = Logger(label: "moonflow.inspector")
        logger.logLevel = .critical
        return Application(
            router: router,
            // Frames up to 16 MB: a page may send a large action.
            server: .http1WebSocketUpgrade(webSocketRouter: router, configuration: .init(ws: .init(maxFrameSize: 16 << 20))),
            configuration: .init(address: .hostname(host, port: requestedPort), serverName: "moonflow"),
            onServerRunning: { channel in onBound(channel.localAddress?.port ?? 0) },
            logger: logger
        )
    }

    static func checkToken(_ request: Request, _ token: String) throws {
        guard let given = request.uri.queryParameters.get("token"), given == token else {
            throw HTTPError(.forbidden, message: "this inspector needs the token from its URL: open the whole URL that moonflow run --inspect printed (…/?token=…)\n")
        }
    }

    /// A browser names the page's origin (`http://…` or `null`); it must be this server's
    /// own. Clients that are not browsers may send none, or their own scheme (`ws://…`).
    static func checkOrigin(_ request: Request) throws {
        let host = request.head.authority ?? ""
        for origin in request.headers[values: .origin] {
            let fromAPage = origin == "null" || origin.hasPrefix("http://") || origin.hasPrefix("https://")
            if fromAPage && origin != "http://\(host)" {
                throw HTTPError(.forbidden, message: "the inspector takes WebSocket connections only from its own page (origin http://\(host)), not from \(origin)\n")
            }
        }
    }
}

final class Box<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func withLock<R>(_ body: (inout Value) -> R) -> R {
        lock.lock(); defer { lock.unlock() }
        return body(&value)
    }
}
