import Foundation
import LuaKit

/// The debugger a command runs with `--debug [HOST:]PORT`: a listener on the address
/// (loopback unless another host is named) whose editors, once they give its token
/// (`DebugAccess`), each get a session against one controller, which serves every Lua
/// state the run makes (`serve`).
///
///     let server = try DebugServer(host: "127.0.0.1", port: 0, name: "counter") { print($0) }
///     print("debugger on \(server.address) with token \(server.access.token)")
///     server.controller.serve(host.lua)
///     server.controller.waitForConfiguration()   // --debug-wait
package final class DebugServer: Sendable {
    package let controller: DebugController
    /// The token an editor gives in `attach`, and the file it is written to.
    package let access: DebugAccess
    private let listener: DAPListener

    /// - Parameters:
    ///   - token: the token (32 hex digits) to use; nil for `MOONFLOW_DEBUG_TOKEN` or a random one.
    ///   - log: where the session's failures, refusals and log points go while no editor is attached.
    /// - Throws: `DAPListener.Failure` naming the address and why (in use, no such host);
    ///   `DebugAccess.BadToken`.
    package init(
        host: String, port: Int, name: String, token: String? = nil,
        log: @escaping @Sendable (String) -> Void
    ) throws {
        let controller = DebugController(name: name, log: log)
        let listener = try DAPListener(host: host, port: port)
        let access: DebugAccess
        do {
            access =
                try token.map { try DebugAccess(address: listener.address, port: listener.port, token: $0) }
                ?? DebugAccess(address: listener.address, port: listener.port)
        } catch {
            listener.close()
            throw error
        }
        listener.start { connection in
            let session = DAPSession(connection: connection, target: controller, access: access, log: log) { session in
                controller.attach(session)
            }
            session.run(log: log)
        }
        self.controller = controller
        self.access = access
        self.listener = listener
    }

    /// Where editors attach: `127.0.0.1:9229`.
    package var address: String { listener.address }
    package var isLoopback: Bool { listener.isLoopback }

    package func close() {
        listener.close()
        access.close()
    }

    /// Why a second editor is turned away.
    package static func oneEditor(_ address: String) -> String {
        "another editor is attached to the debugger on \(address): one at a time; disconnect it, then attach again"
    }

    /// The line a command prints when it starts: where to attach, and the token.
    package var announcement: String {
        "debugger listening on \(address) with token \(access.token)" + (access.file.map { " (in \($0))" } ?? "")
    }
}

/// Whether an editor is attached: one at a time.
package final class EditorSlot: @unchecked Sendable {
    private let lock = NSLock()
    private var taken = false

    package init() {}

    /// True when the slot was free and is now this editor's.
    package func take() -> Bool {
        lock.withLock {
            if taken { return false }
            taken = true
            return true
        }
    }
    package func free() { lock.withLock { taken = false } }
}
