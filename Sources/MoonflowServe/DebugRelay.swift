import Foundation
import LuaKit
import MoonflowDebug
import MoonflowHost

/// `moonflow serve --debug`: editors attach here, and their Debug Adapter Protocol messages
/// go over the dev-server link to the app that connected last, whose host answers them for
/// its features (`DevServerLink`); its answers and events come back the same way.
///
/// Paths are the one thing it changes: a file of a served plugin is, to the editor, its path
/// here (`/home/me/plugins/counter/init.lua`), and to the app, the name the server gave it
/// (`dev:counter/init.lua`). An editor's message while no app is connected is answered with
/// a refusal that says to start the app.
///
/// The relay is the door: as `moonflow run --debug`'s own debugger, it passes nothing but
/// `initialize` on until the editor's `attach` (or `launch`) gives the token it printed
/// (`DAPGate`), and takes the editor slot only then. The app's own session, fed by the
/// dev-server link (whose server checked the app's token), trusts what comes that way.
final class DebugRelay: @unchecked Sendable {
    private let server: DevServer
    private let listener: DAPListener
    /// The token editors give, and the file it is in.
    let access: DebugAccess
    private let lock = NSLock()
    private var editor: DAPConnection?
    /// Each served plugin's folder (absolute, without a trailing slash) and name.
    private let folders: [(path: String, name: String)]

    init(server: DevServer, host: String, port: Int) throws {
        self.server = server
        folders = server.plugins.map { (URL(fileURLWithPath: $0.folder).standardizedFileURL.path, $0.name) }
        listener = try DAPListener(host: host, port: port)
        do { access = try DebugAccess(address: listener.address, port: listener.port) } catch {
            listener.close()
            throw error
        }
        server.relayDebugMessages { [weak self] text in self?.fromApp(text) }
        listener.start { [weak self] connection in self?.relay(connection) }
    }

    /// Where editors attach: `127.0.0.1:9229`.
    var address: String { listener.address }
    var isLoopback: Bool { listener.isLoopback }

    /// One editor's session: its messages to the app until it goes; then the app hears it
    /// went. Until the editor has given the token, the relay answers it itself (`initialize`
    /// with the debugger's capabilities; a refusal, and the connection closed, for anything
    /// else), and the app hears nothing of it. Once it has, the app gets its `initialize`
    /// (numbered 0, so that the answer, which the editor has had, is not sent twice) and then
    /// the `attach`, without the token: the link it comes over was checked.
    private func relay(_ connection: DAPConnection) {
        var gate = DAPGate(access)
        var initialize: LuaValue?
        defer {
            if gate.admitted {
                _ = server.sendToLatestApp(DevServerMessages.dapEnd)
                lock.withLock { if editor === connection { editor = nil } }
            }
            gate.leave()
            connection.close()
        }
        while true {
            let message: LuaValue?
            do { message = try connection.receive() } catch {
                FileHandle.standardError.write(Data("moonflow: debugger: \(error); the connection is closed\n".utf8))
                return
            }
            guard let message else { return }
            var forwarded = [message]
            if !gate.admitted {
                guard message["type"]?.stringValue == "request" else { return }
                switch gate.check(message) {
                case .end(let why):
                    FileHandle.standardError.write(Data("moonflow: debugger: refused a connection: \(why)\n".utf8))
                    try? connection.send(Self.refusal(message, why))
                    return
                case .serve:
                    if message["command"]?.stringValue == "disconnect" {
                        try? connection.send([
                            "type": "response", "seq": 0,
                            "request_seq": message["seq"]?.intValue.map(LuaValue.integer) ?? 0,
                            "success": true, "command": "disconnect",
                        ])
                        return
                    }
                    initialize = message
                    try? connection.send([
                        "type": "response", "seq": 0,
                        "request_seq": message["seq"]?.intValue.map(LuaValue.integer) ?? 0,
                        "success": true, "command": "initialize", "body": DAPSession.capabilities,
                    ])
                    continue
                case .admitted:
                    connection.markAdmitted()
                    lock.withLock { editor = connection }
                    forwarded = [Self.numberedZero(initialize), Self.withoutToken(message)].compactMap { $0 }
                }
            }
            for message in forwarded {
                guard let json = try? message.json() else { continue }
                if !server.sendToLatestApp(DevServerMessages.dap(toApp(json))),
                    message["type"]?.stringValue == "request",
                    message["seq"]?.intValue != 0
                {
                    try? connection.send(
                        Self.refusal(
                            message,
                            "no app is connected to moonflow serve: start the app's debug build (it connects with host.connect(devServer:)), then attach again"
                        ))
                }
            }
        }
    }

    /// The editor's `initialize`, numbered 0 for the app.
    private static func numberedZero(_ request: LuaValue?) -> LuaValue? {
        guard let request, case .table(var table) = request else { return nil }
        table["seq"] = 0
        return .table(table)
    }

    /// An `attach` or `launch` without its `arguments.token`.
    private static func withoutToken(_ request: LuaValue) -> LuaValue {
        guard case .table(var table) = request, case .table(var arguments) = table["arguments"] else { return request }
        arguments["token"] = .nil
        table["arguments"] = .table(arguments)
        return .table(table)
    }

    /// An error response to `request`, with the `body.error` the protocol's ErrorResponse has.
    private static func refusal(_ request: LuaValue, _ why: String) -> LuaValue {
        var fields = DAPSession.errorResponse(to: request, why)
        fields["seq"] = 0
        return LuaValue(fields)
    }

    /// An app's `dap` message: its `msg`, paths made the editor's, to the editor attached.
    private func fromApp(_ text: String) {
        guard let editor = lock.withLock({ editor }), let object = try? LuaValue(json: toEditor(text)),
            let message = object["msg"]
        else { return }
        // The answer to the `initialize` the relay passed on for the editor, which it answered.
        if message["type"]?.stringValue == "response", message["request_seq"]?.intValue == 0,
            message["command"]?.stringValue == "initialize"
        {
            return
        }
        try? editor.send(message)
    }

    /// A served file's path as the app names it: `dev:PLUGIN/PATH`.
    private func toApp(_ json: String) -> String {
        var out = json
        for folder in folders {
            out = out.replacingOccurrences(of: "\"\(folder.path)/", with: "\"dev:\(folder.name)/")
        }
        return out
    }

    /// The editor's path of a file the app names `…dev:PLUGIN/PATH` (its host makes a chunk's
    /// name absolute from its own folder).
    private func toEditor(_ json: String) -> String {
        guard json.contains("dev:") else { return json }
        var out = ""
        var rest = Substring(json)
        while let match = rest.range(of: #""[^"]*dev:([^"/]+)/"#, options: .regularExpression) {
            out += rest[..<match.lowerBound]
            let text = rest[match]
            let name = String(text[text.range(of: "dev:")!.upperBound...].dropLast())
            if let folder = folders.first(where: { $0.name == name }) {
                out += "\"\(folder.path)/"
            } else {
                out += text
            }
            rest = rest[match.upperBound...]
        }
        return out + rest
    }
}
