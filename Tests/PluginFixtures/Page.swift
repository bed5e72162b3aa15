import Foundation
import LuaKit
#if canImport(Glibc)
import Glibc
#endif

/// A WebSocket client standing in for the page: it keeps every text frame it got. The
/// inspector's tests and `moonflow serve`'s open the page's socket with it.
///
/// RFC 6455 as a browser speaks it, on a plain socket: the upgrade request, masked frames
/// out, unmasked frames in (fragments joined, pings answered). Written here rather than taken
/// from a WebSocket package so that the test build compiles no TLS stack (a client package
/// brings SwiftNIO's SSL and BoringSSL, a third of a debug build's time).
package final class Page: @unchecked Sendable {
    private let fd: Int32
    private let inbox = Inbox()
    private let writeLock = NSLock()
    private let reader = DispatchGroup()

    private init(fd: Int32) { self.fd = fd }

    /// Connects; throws when the server refuses the upgrade.
    /// - Parameter headers: more header fields for the upgrade request (`Origin`).
    package static func open(_ url: String, headers: [String: String] = [:]) async throws -> Page {
        guard let parts = URLComponents(string: url), let host = parts.host, let port = parts.port else {
            throw Failure("not a ws://HOST:PORT/PATH address: \(url)")
        }
        let target = parts.percentEncodedPath + (parts.percentEncodedQuery.map { "?" + $0 } ?? "")
        let key = Data((0..<16).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        var head = [
            "GET \(target) HTTP/1.1", "Host: \(host):\(port)", "Upgrade: websocket", "Connection: Upgrade",
            "Sec-WebSocket-Key: \(key)", "Sec-WebSocket-Version: 13",
        ]
        head += headers.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }
        let fd = try RawHTTP.open(head, port: port, host: host)
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        // The response's head, byte by byte: what follows it is already the first frame.
        var response: [UInt8] = []
        while !response.ends(with: Array("\r\n\r\n".utf8)) {
            var byte: UInt8 = 0
            var n = read(fd, &byte, 1)
            while n < 0 && errno == EINTR { n = read(fd, &byte, 1) }
            guard n == 1 else {
                Glibc.close(fd)
                throw Failure(
                    "the connection closed before the upgrade's answer: \(String(decoding: response, as: UTF8.self))")
            }
            response.append(byte)
        }
        let status = String(decoding: response, as: UTF8.self).split(separator: " ").dropFirst().first
        guard status == "101" else {
            Glibc.close(fd)
            throw Failure("the upgrade was refused: \(String(decoding: response, as: UTF8.self))")
        }
        timeout = timeval(tv_sec: 0, tv_usec: 0)  // frames may be minutes apart
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let page = Page(fd: fd)
        page.reader.enter()
        Thread {
            page.readFrames(); page.reader.leave()
        }.start()
        return page
    }

    /// Every frame received so far.
    package var all: [LuaValue] { inbox.all }

    /// Sends `text` as one text frame.
    package func send(_ text: String) async throws {
        try write(opcode: 0x1, Array(text.utf8))
    }

    /// The first `count` frames, waiting for them (up to 30 s).
    package func frames(count: Int) async throws -> [LuaValue] {
        let deadline = Date().addingTimeInterval(30)
        while true {
            let frames = inbox.all
            if frames.count >= count { return Array(frames.prefix(count)) }
            if Date() > deadline { throw Failure("got \(frames.count) frames, not \(count): \(frames)") }
            try await Task.sleep(nanoseconds: 5_000_000)
        }
    }

    /// Says goodbye (a close frame) and ends the connection; the reader closes the socket.
    package func close() {
        try? write(opcode: 0x8, [])
        shutdown(fd, Int32(SHUT_RDWR))
    }

    /// One frame, masked as a client's must be.
    private func write(opcode: UInt8, _ payload: [UInt8]) throws {
        var frame: [UInt8] = [0x80 | opcode]
        switch payload.count {
        case ..<126: frame.append(0x80 | UInt8(payload.count))
        case ..<65536: frame += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xff)]
        default: frame.append(0x80 | 127); frame += (0..<8).reversed().map { UInt8((payload.count >> ($0 * 8)) & 0xff) }
        }
        let mask = (0..<4).map { _ in UInt8.random(in: 0...255) }
        frame += mask
        frame += payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
        try writeLock.withLock {
            var sent = 0
            while sent < frame.count {
                let n = frame[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                guard n > 0 else { throw Failure("the connection is closed (errno \(errno))") }
                sent += n
            }
        }
    }

    /// Reads frames until the connection ends: text messages (fragments joined) go to the
    /// inbox as JSON, pings are answered, a close frame ends it.
    private func readFrames() {
        defer { Glibc.close(fd) }
        var message: [UInt8] = []
        while let (fin, opcode, payload) = readFrame() {
            switch opcode {
            case 0x0, 0x1:
                message += payload
                if fin {
                    if let value = try? LuaValue(json: String(decoding: message, as: UTF8.self)) { inbox.add(value) }
                    message = []
                }
            case 0x8: return
            case 0x9: try? write(opcode: 0xA, payload)
            default: continue
            }
        }
    }

    /// One frame's FIN bit, opcode and (unmasked) payload; nil at the connection's end.
    private func readFrame() -> (Bool, UInt8, [UInt8])? {
        guard let head = readExactly(2) else { return nil }
        var length = Int(head[1] & 0x7f)
        if length == 126 {
            guard let bytes = readExactly(2) else { return nil }
            length = Int(bytes[0]) << 8 | Int(bytes[1])
        } else if length == 127 {
            guard let bytes = readExactly(8) else { return nil }
            length = bytes.reduce(0) { $0 << 8 | Int($1) }
        }
        let mask = head[1] & 0x80 != 0 ? readExactly(4) : nil
        guard var payload = readExactly(length) else { return nil }
        if let mask { payload = payload.enumerated().map { $0.element ^ mask[$0.offset % 4] } }
        return (head[0] & 0x80 != 0, head[0] & 0x0f, payload)
    }

    private func readExactly(_ count: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        var got = 0
        while got < count {
            let n = bytes[got...].withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return nil }
            got += n
        }
        return bytes
    }

    /// The frames received, in order.
    final class Inbox: @unchecked Sendable {
        private let lock = NSLock()
        private var received: [LuaValue] = []
        func add(_ frame: LuaValue) { lock.withLock { received.append(frame) } }
        var all: [LuaValue] { lock.withLock { received } }
    }
}

private extension Array where Element == UInt8 {
    func ends(with suffix: [UInt8]) -> Bool {
        count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix
    }
}
