import Foundation
import LuaKit
import MoonflowDebug

/// `moonflow serve --debug`: editors attach here, and their Debug Adapter Protocol messages
/// go over the dev-server link to the app that connected last, whose host answers them for
/// its features (`DevServerLink`); its answers and events come back the same way.
///
/// Paths are the one thing it changes: a file of a served plugin is, to the editor, its path
/// here (`/home/me/plugins/counter/init.lua`), and to the app, the name the server gave it
/// (`dev:counter/init.lua`). An editor's message while no app is connected is answered with
/// a refusal that says to start the app.
final class DebugRelay: @unchecked Sendable {
    private let server: DevServer
    private let listener: DAPListener
    private let lock = NSLock()
    private var editor: DAPConnection?
    /// Each served plugin's folder (absolute, without a trailing slash) and name.
    private let folders: [(path: String, name: String)]

    init(server: DevServer, host: String, port: Int) throws {
        self.server = server
        folders = server.plugins.map { (URL(fileURLWithPath: $0.folder).standardizedFileURL.path, $0.name) }
        listener = try DAPListener(host: host, port: port)
        server.relayDebugMessages { [weak self] text in self?.fromApp(text) }
        let slot = EditorSlot()
        let address = listener.address
        listener.start { [weak self] connection in
            guard slot.take() else { return DAPSession.turnAway(connection, because: DebugServer.oneEditor(address)) }
            defer { slot.free() }
            self?.relay(connection)
        }
    }

    /// Where editors attach: `127.0.0.1:9229`.
    var address: String { listener.address }
    var isLoopback: Bool { listener.isLoopback }

    /// One editor's session: its messages to the app until it goes; then the app hears it went.
    private func relay(_ connection: DAPConnection) {
        lock.withLock { editor = connection }
        while let message = try? connection.receive() {
            guard let json = try? message.json() else { continue }
            if !server.sendToLatestApp("{\"m\":\"dap\",\"msg\":\(toApp(json))}"), message["type"]?.stringValue == "request" {
                try? connection.send([
                    "type": "response", "seq": 0, "request_seq": message["seq"] ?? 0, "success": false,
                    "command": message["command"] ?? "",
                    "message": "no app is connected to moonflow serve: start the app's debug build (it connects with host.connect(devServer:)), then attach again",
                ])
            }
        }
        _ = server.sendToLatestApp("{\"m\":\"dap-end\"}")
        lock.withLock { if editor === connection { editor = nil } }
        connection.close()
    }

    /// An app's `dap` message: its `msg`, paths made the editor's, to the editor attached.
    private func fromApp(_ text: String) {
        guard let editor = lock.withLock({ editor }), let object = try? LuaValue(json: toEditor(text)),
              let message = object["msg"] else { return }
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
            if let folder = folders.first(where: { $0.name == name }) { out += "\"\(folder.path)/" } else { out += text }
            rest = rest[match.upperBound...]
        }
        return out + rest
    }
}
