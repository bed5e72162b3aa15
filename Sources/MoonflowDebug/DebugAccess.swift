import Foundation
import LuaKit
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Who may use a debugger: whoever gives its token. Reaching the port is not enough (any
/// process of any user on the machine can connect to loopback, and a web page can make the
/// browser send it an HTTP request): until an editor's `attach` or `launch` carries the
/// token in `arguments.token`, a connection is served `initialize` and nothing else, and
/// the editor slot (one editor at a time) is taken only then. The token is 32 random hex
/// digits, made anew for each debugger unless `MOONFLOW_DEBUG_TOKEN` gives one; the command
/// prints it beside the address and writes it to a file only its user can read
/// (`tokenFile(port:)`), for an editor's configuration to read.
///
///     let access = try DebugAccess(address: listener.address, port: listener.port)
///     var gate = DAPGate(access)                // one per connection
///     switch gate.check(request) { case .serve, .admitted: …; case .end(let why): refuse(why) }
package final class DebugAccess: Sendable {
    package let token: String
    /// Where the token was written, when it could be (an owner-only folder).
    package let file: String?
    let address: String
    let slot = EditorSlot()

    /// - Parameter token: the token to use (`MOONFLOW_DEBUG_TOKEN`); nil for a random one.
    /// - Throws: `DebugAccess.BadToken` when `token` is not 32 hex digits.
    package init(
        address: String, port: Int, token: String? = ProcessInfo.processInfo.environment["MOONFLOW_DEBUG_TOKEN"]
    ) throws {
        if let token, !Self.isToken(token) { throw BadToken() }
        self.token = token?.lowercased() ?? Self.randomToken()
        self.address = address
        file = Self.write(self.token, port: port)
    }

    /// Takes the file away (the debugger is closing).
    package func close() {
        if let file { unlink(file) }
    }

    /// Whether `given` is the token, compared in time that does not depend on where it differs.
    func admits(_ given: String?) -> Bool {
        guard let given else { return false }
        let a = Array(given.lowercased().utf8), b = Array(token.utf8)
        guard a.count == b.count else { return false }
        return zip(a, b).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }

    static func isToken(_ text: String) -> Bool { text.utf8.count == 32 && text.allSatisfy(\.isHexDigit) }

    private static func randomToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<2).map { _ in
            let n = generator.next() as UInt64
            let hex = String(n, radix: 16)
            return String(repeating: "0", count: 16 - hex.count) + hex
        }.joined()
    }

    /// Where a debugger on `port` writes its token: `$XDG_RUNTIME_DIR/moonflow/debug-PORT.token`,
    /// or `~/.moonflow/run/debug-PORT.token` where there is no XDG_RUNTIME_DIR.
    package static func tokenFile(port: Int) -> String? {
        let environment = ProcessInfo.processInfo.environment
        let folder: String
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty {
            folder = runtime + "/moonflow"
        } else if let home = environment["HOME"], !home.isEmpty {
            folder = home + "/.moonflow/run"
        } else {
            return nil
        }
        return "\(folder)/debug-\(port).token"
    }

    /// Writes `token` to `tokenFile(port:)`, readable by this user only; nil when the folder
    /// cannot be made or is not this user's alone (then nothing is written).
    private static func write(_ token: String, port: Int) -> String? {
        guard let path = tokenFile(port: port) else { return nil }
        let folder = (path as NSString).deletingLastPathComponent
        try? FileManager.default.createDirectory(
            atPath: folder, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        var info = stat()
        guard lstat(folder, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR, info.st_uid == getuid(),
            info.st_mode & 0o077 == 0
        else { return nil }
        unlink(path)
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { return nil }
        defer { Foundation.close(fd) }
        let bytes = Array((token + "\n").utf8)
        guard Foundation.write(fd, bytes, bytes.count) == bytes.count else { unlink(path); return nil }
        return path
    }

    package struct BadToken: Error, CustomStringConvertible {
        package var description: String {
            "MOONFLOW_DEBUG_TOKEN must be 32 hex digits (as a debugger prints its token)"
        }
    }
}

/// One connection's way in (`DebugAccess`): what it may be served before and after its token.
package struct DAPGate {
    private let access: DebugAccess?
    /// Whether the editor gave the token (and holds the editor slot); from the start for a
    /// channel that needs none.
    package private(set) var admitted: Bool

    /// - Parameter access: nil for a channel that is trusted already (an app's session, fed
    ///   by the dev-server link, whose server checked the editor's token).
    package init(_ access: DebugAccess?) {
        self.access = access
        admitted = access == nil
    }

    package enum Verdict: Equatable {
        /// Serve the request.
        case serve
        /// The request (an `attach` or `launch`) gave the token: serve it, and the editor is in.
        case admitted
        /// Refuse the request with this reason, and close the connection.
        case end(String)
    }

    package mutating func check(_ request: LuaValue) -> Verdict {
        if admitted { return .serve }
        guard let access else { return .serve }
        let command = request["command"]?.stringValue ?? ""
        switch command {
        case "initialize", "disconnect": return .serve
        case "attach", "launch":
            guard access.admits(request["arguments"]?["token"]?.stringValue) else {
                return .end(
                    request["arguments"]?["token"] == nil
                        ? "\(command) needs the debugger's token in arguments.token: \(access.where)"
                        : "\(command) gave a wrong token; the debugger's token is \(access.where)")
            }
            guard access.slot.take() else { return .end(DebugServer.oneEditor(access.address)) }
            admitted = true
            return .admitted
        default:
            return .end(
                "\(command.isEmpty ? "a request" : command) before attach: the debugger serves nothing until "
                    + "attach (or launch) gives its token in arguments.token: \(access.where)")
        }
    }

    /// The connection ended: an admitted editor's slot is free again.
    package func leave() {
        if admitted { access?.slot.free() }
    }
}

extension DebugAccess {
    /// Where the user finds the token, for a refusal.
    fileprivate var `where`: String {
        "moonflow printed it with the address (\"debugger listening on \(address) with token ...\")"
            + (file.map { " and wrote it to \($0)" } ?? "")
    }
}
