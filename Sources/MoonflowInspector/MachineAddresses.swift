import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// This machine's own addresses and names, for a server that listens on every address
/// (`--host 0.0.0.0`, `--inspect 0.0.0.0:PORT`): a device on the network reaches it by one of
/// them, so the `Host` check takes each, and the printed URL names one a device can open.
enum MachineAddresses {
    /// `0.0.0.0`, `::` (bracketed or not): every address of the machine.
    static func isWildcard(_ host: String) -> Bool {
        ["0.0.0.0", "::", "[::]", "0:0:0:0:0:0:0:0"].contains(host)
    }

    /// An IPv6 address in brackets, as a URL and `Host` write it; anything else as it is.
    static func bracketed(_ host: String) -> String {
        host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
    }

    /// The addresses of the machine's interfaces that are up (IPv6 link-local ones left out:
    /// a URL needs their zone), and its host name (with `.local` when it has no dot, as
    /// multicast DNS answers it). Read anew at each call: an interface may come or go.
    static func current() -> [String] {
        var out = interfaces()
        var name = [CChar](repeating: 0, count: 256)
        if gethostname(&name, name.count - 1) == 0 {
            let host = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                .lowercased()
            if !host.isEmpty, host != "localhost" {
                out.append(host)
                if !host.contains(".") { out.append(host + ".local") }
            }
        }
        return out
    }

    /// The numeric addresses of the interfaces that are up, IPv6 link-local ones left out.
    static func interfaces() -> [String] {
        var out: [String] = []
        var list: UnsafeMutablePointer<ifaddrs>?
        if getifaddrs(&list) == 0, let first = list {
            defer { freeifaddrs(list) }
            var entry: UnsafeMutablePointer<ifaddrs>? = first
            while let item = entry {
                defer { entry = item.pointee.ifa_next }
                guard let address = item.pointee.ifa_addr, (item.pointee.ifa_flags & UInt32(IFF_UP)) != 0 else {
                    continue
                }
                if let text = numeric(address), !text.lowercased().hasPrefix("fe80:"), !out.contains(text) {
                    out.append(text)
                }
            }
        }
        return out
    }

    /// An address a device on the network can open: the first IPv4 address that is not
    /// loopback (IPv6 first when `preferringIPv6`), else loopback's.
    static func reachable(preferringIPv6: Bool) -> String {
        let numeric = interfaces()
        let v4 = numeric.filter { !$0.contains(":") && !$0.hasPrefix("127.") && !$0.hasPrefix("169.254.") }
        let v6 = numeric.filter { $0.contains(":") && $0 != "::1" }
        let order = preferringIPv6 ? v6 + v4 : v4 + v6
        return order.first ?? (preferringIPv6 ? "::1" : "127.0.0.1")
    }

    /// An interface address as text (`192.168.1.5`, `2001:db8::5`); nil for other families.
    private static func numeric(_ address: UnsafeMutablePointer<sockaddr>) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            return address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
                var a = v4.pointee.sin_addr
                return inet_ntop(AF_INET, &a, &buffer, socklen_t(buffer.count)).map { String(cString: $0) }
            }
        case AF_INET6:
            return address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
                var a = v6.pointee.sin6_addr
                return inet_ntop(AF_INET6, &a, &buffer, socklen_t(buffer.count)).map { String(cString: $0) }
            }
        default:
            return nil
        }
    }
}
