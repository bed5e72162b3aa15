import Foundation
import LuaKit
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A plain TCP socket an editor's debug adapter client connects to, as debugpy and
/// `node --inspect` listen: loopback unless another host is named. Each connection is
/// served on a thread of its own, so one that comes while another is served is answered
/// at once (the server's `serve` turns it away: one editor at a time).
///
///     let listener = try DAPListener(host: "127.0.0.1", port: 0)   // 0: any free port
///     print("debugger on \(listener.host):\(listener.port)")
///     listener.start { connection in DAPSession(connection: connection, target: run).run() }
///
/// Kept to POSIX calls, as the dev-server link is: the run links no networking library.
package final class DAPListener: @unchecked Sendable {
    package let host: String
    /// The port bound (the one asked for, or the one the system gave for 0).
    package let port: Int
    private let fd: Int32
    private let lock = NSLock()
    /// Set by `close()`; the accept loop stops at it.
    private var closed = false
    /// Whether the accept loop runs: while it does, only it closes the descriptor, so its
    /// `accept` never meets the number reused by another socket.
    private var accepting = false

    /// Binds and listens.
    /// - Parameter admitTimeout: how long a connection may take to give the token.
    /// - Throws: `DAPListener.Failure` naming the address and why (in use, no such host).
    package init(host: String, port: Int, admitTimeout: Double = DAPListener.admitTimeout) throws {
        self.admitTimeout = admitTimeout
        let fd = try DAPConnection.socket(host: host, port: port, passive: true) { fd, address, length in
            var on: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
            guard bind(fd, address, length) == 0 else {
                throw Failure(
                    description:
                        "cannot listen on \(host):\(port): \(String(cString: strerror(errno))) (another debugger there? pick another port)"
                )
            }
            guard listen(fd, 128) == 0 else {
                throw Failure(description: "cannot listen on \(host):\(port): \(String(cString: strerror(errno)))")
            }
        }
        var address = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        let bound: UInt16 = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
        }
        self.fd = fd
        self.host = host
        self.port = Int(bound)
    }

    deinit { close() }

    /// Where editors attach: `127.0.0.1:9229`, `[::1]:9229`.
    package var address: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// Whether only this machine can reach the listener.
    package var isLoopback: Bool { ["127.0.0.1", "localhost", "::1"].contains(host.lowercased()) }

    /// The most connections held at once that have not given the token (counting those
    /// ended but not yet closed): one more ends the oldest of them, so a flood of idle
    /// connections never keeps the editor out, and never takes the descriptors the run
    /// needs for its own files. Eight, or fewer under a low `ulimit -n` (one under 72).
    package static let maxWaiting: Int = {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 8 }  // unknown: the most
        return Int(max(1, min(8, (Int64(clamping: limit.rlim_cur) - 64) / 8)))
    }()
    /// How long a connection may take to give the token before it is ended, unless the
    /// listener is made with another.
    package static let admitTimeout: Double = 10
    private let admitTimeout: Double

    /// Accepts editors one after another on a thread of its own until `close()`,
    /// handing each connection to `serve` (which returns when the editor goes) on a thread
    /// of the connection's. Connections that have not given the token are bounded
    /// (`maxWaiting`, `admitTimeout`); when the process runs out of descriptors the
    /// oldest of them is ended and accepting goes on.
    package func start(_ serve: @escaping @Sendable (DAPConnection) -> Void) {
        let started = lock.withLock { () -> Bool in
            guard !closed, !accepting else { return false }
            accepting = true
            return true
        }
        guard started else { return }
        let thread = Thread { [self] in
            let waiting = WaitingConnections()
            serving: while !lock.withLock({ closed }) {
                waiting.endExpired(after: admitTimeout)
                var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                let polled = poll(&ready, 1, 500)
                if polled == 0 || (polled < 0 && errno == EINTR) { continue }
                if waiting.held >= Self.maxWaiting {
                    // Full: the oldest waiting one is ended, and the next is taken once its
                    // descriptor is closed, never before (the run's own opens come first).
                    _ = waiting.endOldest()
                    usleep(5_000)
                    continue
                }
                let client = accept(fd, nil, nil)
                if client < 0 {
                    switch errno {
                    case EINTR, EAGAIN, ECONNABORTED, EPROTO: continue
                    case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                        // Out of descriptors: one waiting connection gives its own up, and the
                        // editor's connection, queued in the backlog, is taken on the next turn.
                        usleep(waiting.endOldest() ? 5_000 : 50_000)
                        continue
                    default:
                        if lock.withLock({ closed }) { break serving }
                        usleep(50_000)
                        continue
                    }
                }
                let connection = DAPConnection(fd: client)
                waiting.add(connection)
                let session = Thread { serve(connection) }
                session.name = "moonflow-debug-session"
                session.start()
            }
            lock.withLock {
                accepting = false
                Foundation.close(fd)
            }
        }
        thread.name = "moonflow-debug-listener"
        thread.start()
    }

    /// Stops listening (a connection being served goes on until it ends).
    package func close() {
        lock.withLock {
            guard !closed else { return }
            closed = true
            shutdown(fd, Int32(SHUT_RDWR))  // wakes a waiting accept
            if !accepting { Foundation.close(fd) }
        }
    }

    package struct Failure: Error, CustomStringConvertible {
        package let description: String
    }
}

/// The connections a listener has accepted that have not (yet) given the token, oldest
/// first, until each is closed (an ended one holds its descriptor until its thread closes
/// it). Weak: a connection that is gone is gone from it.
private final class WaitingConnections {
    private struct Entry { weak var connection: DAPConnection? }
    private var entries: [Entry] = []

    /// How many descriptors the waiting connections hold.
    var held: Int {
        prune()
        return entries.count
    }

    func add(_ connection: DAPConnection) {
        prune()
        entries.append(Entry(connection: connection))
    }

    /// Ends those that waited longer than `seconds` for their token.
    func endExpired(after seconds: Double) {
        prune()
        let now = DispatchTime.now().uptimeNanoseconds
        for entry in entries {
            guard let connection = entry.connection,
                now - connection.accepted.uptimeNanoseconds > UInt64(seconds * 1e9)
            else { continue }
            connection.shutDown()
        }
    }

    /// Ends the oldest waiting connection not yet ended (of those that sent nothing, if
    /// any: a flood of idle connections never ends an editor that is attaching); false
    /// when none is left to end.
    func endOldest() -> Bool {
        prune()
        let live = entries.compactMap(\.connection).filter { !$0.isDown }
        guard let oldest = live.first(where: { !$0.hasSpoken }) ?? live.first else { return false }
        oldest.shutDown()
        return true
    }

    private func prune() {
        entries.removeAll { entry in
            guard let connection = entry.connection else { return true }
            return connection.isAdmitted || connection.isClosed
        }
    }
}

/// One editor's connection: framed messages in, framed messages out.
///
/// **Threading:** `send` from any thread (one message at a time, under a lock);
/// `receive` from the connection's thread; `shutDown` from any (a blocked `send` or
/// `receive` returns); `close` from the thread that receives, once it is done.
package final class DAPConnection: @unchecked Sendable {
    private let fd: Int32
    private let writeLock = NSLock()
    /// Guards `closed` and `down`; never held across a call that blocks.
    private let stateLock = NSLock()
    private var reader = DAPFrameReader()
    private var ready: [LuaValue] = []
    /// Set when the descriptor is closed: no send writes to a number the system may have
    /// given another socket since.
    private var closed = false
    private var down = false
    /// Whether the editor has given the debugger's token (`DAPGate`): the listener ends an
    /// idle connection that has not, and never one that has.
    private var admittedFlag = false
    /// Whether a whole message has come from the editor (under `stateLock`; `spokeHere` is
    /// the receiving thread's own copy).
    private var spoke = false
    private var spokeHere = false
    /// When the listener accepted it.
    let accepted = DispatchTime.now()

    /// The socket's send buffer: what an editor that stops reading leaves in the kernel is
    /// bounded (the system's own grows to megabytes); the outbox bounds the rest.
    static let sendBuffer: Int32 = 256 << 10

    init(fd: Int32) {
        self.fd = fd
        var on: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
        var size = Self.sendBuffer
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        #if canImport(Darwin)
        setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &on, socklen_t(MemoryLayout<Int32>.size))
        #endif
    }

    deinit { close() }

    /// A TCP socket for the first address `host:port` resolves to, handed to `use` with that
    /// address (to bind or to connect); closed when `use` throws.
    fileprivate static func socket(
        host: String, port: Int, passive: Bool,
        _ use: (Int32, UnsafePointer<sockaddr>, socklen_t) throws -> Void
    ) throws -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_flags = passive ? AI_PASSIVE : 0
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let first = list, let address = first.pointee.ai_addr
        else {
            throw DAPListener.Failure(description: "\(host): no such host\(passive ? " to listen on" : "")")
        }
        defer { freeaddrinfo(list) }
        #if canImport(Glibc)
        let fd = Glibc.socket(first.pointee.ai_family, first.pointee.ai_socktype, first.pointee.ai_protocol)
        #else
        let fd = Darwin.socket(first.pointee.ai_family, first.pointee.ai_socktype, first.pointee.ai_protocol)
        #endif
        guard fd >= 0 else {
            throw DAPListener.Failure(description: "cannot open a socket: \(String(cString: strerror(errno)))")
        }
        do { try use(fd, address, first.pointee.ai_addrlen) } catch {
            Foundation.close(fd)
            throw error
        }
        return fd
    }

    /// The editor's end: a connection to a debugger at `host:port` (a relay's, a test's).
    /// With `timeout`, a `receive` that waits longer returns nil, as when the debugger is gone.
    /// - Throws: `DAPListener.Failure` naming the address when nothing answers there.
    package static func connect(host: String, port: Int, timeout: Int? = nil) throws -> DAPConnection {
        let fd = try socket(host: host, port: port, passive: false) { fd, address, length in
            guard Foundation.connect(fd, address, length) == 0 else {
                throw DAPListener.Failure(
                    description: "no debugger at \(host):\(port): \(String(cString: strerror(errno)))")
            }
        }
        if let timeout {
            var wait = timeval(tv_sec: timeout, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
        }
        return DAPConnection(fd: fd)
    }

    /// Writes one message.
    /// - Throws: `DAPListener.Failure` when the editor is gone.
    package func send(_ message: LuaValue) throws {
        let bytes = try DAPFrameReader.frame(message)
        try writeLock.withLock {
            guard !stateLock.withLock({ closed || down }) else {
                throw DAPListener.Failure(description: "the connection is closed")
            }
            var sent = 0
            while sent < bytes.count {
                let n = bytes[sent...].withUnsafeBytes { buffer in
                    #if canImport(Glibc)
                    Glibc.send(fd, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL))
                    #else
                    Darwin.send(fd, buffer.baseAddress, buffer.count, 0)
                    #endif
                }
                if n < 0, errno == EINTR { continue }
                guard n > 0 else { throw DAPListener.Failure(description: "the editor closed the connection") }
                sent += n
            }
        }
    }

    /// The next message, or nil when the editor closed the connection.
    /// - Throws: `DAPFrameError` when the bytes break the framing.
    package func receive() throws -> LuaValue? {
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while ready.isEmpty {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return nil }
            ready = try reader.take(chunk[..<n])
        }
        if !spokeHere {
            spokeHere = true
            stateLock.withLock { spoke = true }
        }
        return ready.removeFirst()
    }

    /// Whether the editor has given the token; `markAdmitted` says it has.
    package var isAdmitted: Bool { stateLock.withLock { admittedFlag } }
    /// Whether it has been ended (`shutDown`), and whether its descriptor is closed.
    var isDown: Bool { stateLock.withLock { down || closed } }
    var isClosed: Bool { stateLock.withLock { closed } }
    var hasSpoken: Bool { stateLock.withLock { spoke } }
    package func markAdmitted() { stateLock.withLock { admittedFlag = true } }

    /// Ends the conversation from any thread: a `receive` or `send` under way returns, and
    /// none waits again. The descriptor stays open until `close`.
    package func shutDown() {
        stateLock.withLock {
            guard !closed, !down else { return }
            down = true
            shutdown(fd, Int32(SHUT_RDWR))
        }
    }

    /// Ends the connection: called by the thread that receives (or when the last reference
    /// goes), so no `receive` is under way on the descriptor it closes; a `send` under way
    /// is woken first, and the descriptor closed once it has returned.
    package func close() {
        shutDown()
        writeLock.withLock {
            stateLock.withLock {
                guard !closed else { return }
                closed = true
                Foundation.close(fd)
            }
        }
    }
}
