import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One HTTP/1.1 request written on a socket as given, for what URLSession will not send
/// (any `Host`, no `Host`): the response's status and body. A `101` ends at its head.
package enum RawHTTP {
    /// Connects to loopback's `port` and writes the request.
    /// - Parameter receiveBuffer: the socket's receive buffer in bytes (nil: the system's).
    /// - Returns: the socket, for the caller to read and close.
    package static func open(
        _ head: [String], port: Int, host: String = "127.0.0.1", receiveBuffer: Int32? = nil
    ) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure("socket: errno \(errno)") }
        if var size = receiveBuffer {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr(host)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { close(fd); throw Failure("connect to port \(port): errno \(errno)") }
        let request = Array((head.joined(separator: "\r\n") + "\r\n\r\n").utf8)
        var sent = 0
        while sent < request.count {
            let n = request[sent...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }  // a signal (a child process ended) is not an error
            guard n > 0 else { close(fd); throw Failure("write: errno \(errno)") }
            sent += n
        }
        return fd
    }

    package static func send(
        _ head: [String], port: Int, host: String = "127.0.0.1"
    ) throws -> (status: Int, body: String) {
        let fd = try open(head, port: port, host: host)
        defer { close(fd) }
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let text = String(decoding: received, as: UTF8.self)
            if let end = text.range(of: "\r\n\r\n") {
                let headText = String(text[..<end.lowerBound])
                let status = Int(headText.split(separator: " ").dropFirst().first ?? "") ?? 0
                let length = headText.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                    .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) }
                let body = String(text[end.upperBound...])
                if status == 101 || length.map({ body.utf8.count >= $0 }) == true { return (status, body) }
            }
            let n = read(fd, &buffer, buffer.count)
            if n < 0 && errno == EINTR { continue }  // a signal (a child process ended) is not the end
            if n <= 0 {
                // Nothing at all: say how the connection ended, for the failure to show.
                if text.isEmpty { return (0, n < 0 ? "(read failed: errno \(errno))" : "(closed with no answer)") }
                let headText = text.components(separatedBy: "\r\n\r\n")[0]
                let status = Int(headText.split(separator: " ").dropFirst().first ?? "") ?? 0
                return (status, text.components(separatedBy: "\r\n\r\n").dropFirst().joined(separator: "\r\n\r\n"))
            }
            received += buffer[..<n]
        }
    }
}

/// A test's own error: what went wrong, as the failure shows it.
package struct Failure: Error, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}
