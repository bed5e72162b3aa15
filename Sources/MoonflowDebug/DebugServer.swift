import Foundation
import LuaKit

/// The debugger a command runs with `--debug [HOST:]PORT`: a listener on the address
/// (loopback unless another host is named) whose editors each get a session against one
/// controller, which serves every Lua state the run makes (`serve`).
///
///     let server = try DebugServer(host: "127.0.0.1", port: 0, name: "counter") { print($0) }
///     server.controller.serve(host.lua)
///     server.controller.waitForConfiguration()   // --debug-wait
package final class DebugServer: Sendable {
    package let controller: DebugController
    private let listener: DAPListener

    /// - Parameter log: where the session's failures and log points go while no editor is attached.
    /// - Throws: `DAPListener.Failure` naming the address and why (in use, no such host).
    package init(host: String, port: Int, name: String, log: @escaping @Sendable (String) -> Void) throws {
        let controller = DebugController(name: name, log: log)
        let listener = try DAPListener(host: host, port: port)
        let editor = EditorSlot()
        let address = listener.address
        listener.start { connection in
            guard editor.take() else { return DAPSession.turnAway(connection, because: DebugServer.oneEditor(address)) }
            defer { editor.free() }
            let session = DAPSession(connection: connection, target: controller)
            controller.attach(session)
            session.run(log: log)
        }
        self.controller = controller
        self.listener = listener
    }

    /// Where editors attach: `127.0.0.1:9229`.
    package var address: String { listener.address }
    package var isLoopback: Bool { listener.isLoopback }

    package func close() { listener.close() }

    /// Why a second editor is turned away.
    package static func oneEditor(_ address: String) -> String {
        "another editor is attached to the debugger on \(address): one at a time; disconnect it, then attach again"
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
