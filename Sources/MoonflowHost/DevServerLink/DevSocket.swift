import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A WebSocket client on a plain TCP socket (RFC 6455, text frames only): the app's end of
/// its link to `moonflow serve`. Kept to POSIX calls so that an app links no networking
/// library for it (FoundationNetworking's WebSocket task is missing on some Linux builds).
///
///     let socket = try DevSocket.open(host: "127.0.0.1", port: 8377, path: "/app?token=…", timeout: 2)
///     try socket.send(#"{"m":"hello"}"#)
///     while let text = socket.receive() { … }
///
/// The server's handshake answer is checked for its status (a refusal's text is thrown), not
/// for `Sec-WebSocket-Accept`: the token in the path is what authenticates, on loopback or a
/// local network.
///
/// **Threading:** `send` may be called from any thread (one frame at a time, under a lock);
/// `receive` from one thread; `close` from any, and it ends a `receive` under way.
final class DevSocket: @unchecked Sendable {
    private let fd: Int32
    private let writeLock = NSLock()
    private var pending: [UInt8] = []

    /// Why a connection failed, as the app's log shows it.
    struct Failure: Error, CustomStringConvertible {
        let description: String
        /// The server answered and said no (a wrong token, say): asking again will not help.
        var refused = false
        /// Nothing answered at all: no such host, or nothing listens on the port.
        var unreachable = false
    }

    private init(fd: Int32) { self.fd = fd }

    deinit { Foundation.close(fd) }

    /// Connects, sends the upgrade request and reads the answer.
    /// - Throws: `Failure`: no server there, or the server refused (its status line and text).
    static func open(host: String, port: Int, path: String, timeout: TimeInterval) throws -> DevSocket {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let first = list else {
            throw Failure(description: "\(host):\(port): no such host", unreachable: true)
        }
        defer { freeaddrinfo(list) }
        var fd: Int32 = -1
        var info: UnsafeMutablePointer<addrinfo>? = first
        while let entry = info {
            fd = socket(entry.pointee.ai_family, entry.pointee.ai_socktype, entry.pointee.ai_protocol)
            if fd >= 0 {
                if connect(fd, entry.pointee.ai_addr, entry.pointee.ai_addrlen) == 0 { break }
                Foundation.close(fd)
                fd = -1
            }
            info = entry.pointee.ai_next
        }
        guard fd >= 0 else { throw Failure(description: "nothing listens at \(host):\(port)", unreachable: true) }
        var on: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
        #if canImport(Darwin)
        setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &on, socklen_t(MemoryLayout<Int32>.size))
        #endif
        let connection = DevSocket(fd: fd)
        // The handshake must come back within `timeout`; afterwards reads wait as long as it takes.
        connection.setReceiveTimeout(timeout)
        var key = [UInt8](repeating: 0, count: 16)
        for i in key.indices { key[i] = UInt8.random(in: 0...255) }
        let authority = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        let request =
            "GET \(path) HTTP/1.1\r\nHost: \(authority)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: \(Data(key).base64EncodedString())\r\nSec-WebSocket-Version: 13\r\n\r\n"
        try connection.write(Array(request.utf8))
        var head: [UInt8] = []
        let end: [UInt8] = Array("\r\n\r\n".utf8)
        while !(head.count >= 4 && Array(head.suffix(4)) == end) {
            guard let byte = try connection.readBytes(1).first else {
                throw Failure(description: "\(authority) closed the connection during the handshake")
            }
            head.append(byte)
            if head.count > 64 << 10 {
                throw Failure(description: "\(authority) sent an answer too long to be a handshake")
            }
        }
        let text = String(decoding: head, as: UTF8.self)
        let status = text.split(separator: "\r\n").first.map(String.init) ?? ""
        guard status.split(separator: " ").dropFirst().first == "101" else {
            // A refusal carries its reason as the body.
            let length =
                text.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                .flatMap { Int($0.split(separator: ":")[1].trimmingWhitespace()) } ?? 0
            let body =
                length > 0 ? String(decoding: (try? connection.readBytes(min(length, 4096))) ?? [], as: UTF8.self) : ""
            throw Failure(
                description: "\(authority) refused: \(status)\(body.isEmpty ? "" : ": " + body.trimmingWhitespace())",
                refused: true)
        }
        connection.setReceiveTimeout(0)
        return connection
    }

    private func setReceiveTimeout(_ seconds: TimeInterval) {
        var value = timeval()
        value.tv_sec = numericCast(Int(seconds))
        value.tv_usec = numericCast(Int((seconds - seconds.rounded(.down)) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Sends `text` as one masked text frame.
    /// - Throws: `Failure` when the connection is gone.
    func send(_ text: String) throws {
        try sendFrame(opcode: 0x1, Array(text.utf8))
    }

    private func sendFrame(opcode: UInt8, _ payload: [UInt8]) throws {
        var frame: [UInt8] = [0x80 | opcode]
        let n = payload.count
        if n < 126 {
            frame.append(0x80 | UInt8(n))
        } else if n <= 0xFFFF {
            frame += [0x80 | 126, UInt8(n >> 8), UInt8(n & 0xFF)]
        } else {
            frame.append(0x80 | 127)
            for shift in stride(from: 56, through: 0, by: -8) {
                frame.append(UInt8((UInt64(n) >> UInt64(shift)) & 0xFF))
            }
        }
        let mask = (0..<4).map { _ in UInt8.random(in: 0...255) }
        frame += mask
        frame.reserveCapacity(frame.count + n)
        for (i, byte) in payload.enumerated() { frame.append(byte ^ mask[i & 3]) }
        try writeLock.withLock { try write(frame) }
    }

    /// The next text message; nil once the connection closed (or failed).
    func receive() -> String? {
        var message: [UInt8] = []
        while true {
            guard let header = try? readBytes(2), header.count == 2 else { return nil }
            let fin = header[0] & 0x80 != 0, opcode = header[0] & 0x0F
            var length = UInt64(header[1] & 0x7F)
            if length == 126 {
                guard let b = try? readBytes(2), b.count == 2 else { return nil }
                length = UInt64(b[0]) << 8 | UInt64(b[1])
            } else if length == 127 {
                guard let b = try? readBytes(8), b.count == 8 else { return nil }
                length = b.reduce(0) { $0 << 8 | UInt64($1) }
            }
            let masked = header[1] & 0x80 != 0
            let mask = masked ? ((try? readBytes(4)) ?? []) : []
            guard length < 256 << 20, var payload = try? readBytes(Int(length)), payload.count == Int(length) else {
                return nil
            }
            if masked, mask.count == 4 { for i in payload.indices { payload[i] ^= mask[i & 3] } }
            switch opcode {
            case 0x8:  // close
                try? sendFrame(opcode: 0x8, [])
                return nil
            case 0x9:  // ping
                try? sendFrame(opcode: 0xA, payload)
            case 0xA:  // pong
                break
            default:  // text, binary or a continuation
                message += payload
                if fin { return String(decoding: message, as: UTF8.self) }
            }
        }
    }

    /// Ends the connection; a `receive` under way returns nil.
    func close() {
        shutdown(fd, Int32(SHUT_RDWR))
    }

    // MARK: - Bytes

    private func write(_ bytes: [UInt8]) throws {
        var done = 0
        while done < bytes.count {
            #if canImport(Glibc)
            let n = bytes[done...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            #else
            let n = bytes[done...].withUnsafeBytes { Darwin.send(fd, $0.baseAddress, $0.count, 0) }
            #endif
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw Failure(description: "the connection to the dev server is gone") }
            done += n
        }
    }

    /// Up to `count` bytes: fewer only when the connection ended.
    private func readBytes(_ count: Int) throws -> [UInt8] {
        while pending.count < count {
            var block = [UInt8](repeating: 0, count: max(4096, count - pending.count))
            let n = block.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                throw Failure(description: "the dev server did not answer in time")
            }
            if n <= 0 { break }
            pending += block[..<n]
        }
        let taken = Array(pending.prefix(count))
        pending.removeFirst(taken.count)
        return taken
    }
}
