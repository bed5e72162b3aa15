import Foundation
import LuaKit
@testable import MoonflowDebug
import XCTest

/// The editor's end: a plain socket, the protocol's framing, requests numbered in order.
final class EditorClient {
    private let fd: Int32
    private var reader = DAPFrameReader()
    private var ready: [LuaValue] = []
    /// Events that came while a request waited for its answer, for `next()`.
    private var events: [LuaValue] = []
    private var seq = 0
    /// Every message received, in the order it came.
    private(set) var received: [LuaValue] = []

    /// - Parameter receiveBuffer: the socket's receive buffer in bytes (the system's own, which
    ///   grows to megabytes, when nil): what an editor that stops reading leaves unread.
    init(port: Int, receiveBuffer: Int? = nil) throws {
        fd = try Self.connected(port: port, receiveBuffer: receiveBuffer)
        var wait = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    /// A TCP socket connected to 127.0.0.1:`port`.
    static func connected(port: Int, receiveBuffer: Int? = nil) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if var size = receiveBuffer.map(Int32.init) {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard status == 0 else {
            close(fd)
            throw DAPListener.Failure(description: "connect failed: \(String(cString: strerror(errno)))")
        }
        return fd
    }

    func write(_ bytes: [UInt8]) throws {
        let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard n == bytes.count else { throw DAPListener.Failure(description: "short write") }
    }

    /// Sends a request and returns its response (events that come first are kept for `next()`).
    func request(_ command: String, _ arguments: LuaValue? = nil) throws -> LuaValue {
        seq += 1
        var message: [String: LuaValue] = ["type": "request", "seq": LuaValue(seq), "command": LuaValue(command)]
        if let arguments { message["arguments"] = arguments }
        try write(DAPFrameReader.frame(LuaValue(message)))
        while true {
            guard let next = try nextOrEnd() else {
                throw DAPListener.Failure(description: "the adapter closed the connection")
            }
            if next["type"]?.stringValue == "response" {
                XCTAssertEqual(next["request_seq"]?.intValue, Int64(seq), "answers come in request order")
                return next
            }
            events.append(next)
        }
    }

    /// `attach` with the debugger's token, as an editor's configuration gives it.
    @discardableResult
    func attach(token: String) throws -> LuaValue { try request("attach", ["token": LuaValue(token)]) }

    /// The next event named `name`, skipping others.
    func event(_ name: String) throws -> LuaValue {
        while true {
            let message = try next()
            if message["event"]?.stringValue == name { return message }
        }
    }

    func next() throws -> LuaValue {
        if !events.isEmpty { return events.removeFirst() }
        guard let message = try nextOrEnd() else {
            throw DAPListener.Failure(description: "the adapter closed the connection")
        }
        return message
    }

    /// The next message, or nil once the adapter has closed the connection.
    func nextOrEnd() throws -> LuaValue? {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while ready.isEmpty {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { return nil }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else {
                throw DAPListener.Failure(
                    description: errno == EAGAIN
                        ? "no answer in 30 s" : "recv failed: \(String(cString: strerror(errno)))")
            }
            ready = try reader.take(chunk[..<n])
            received += ready
        }
        return ready.removeFirst()
    }
}
