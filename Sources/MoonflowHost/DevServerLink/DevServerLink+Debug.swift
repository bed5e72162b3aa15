import Foundation
import LuaKit
import MoonflowDebug

/// `moonflow serve --debug`: an editor attached to the server reaches this app's features.
/// Its messages come over the link as `{"m":"dap","msg":{…}}` and go to a session of the
/// app's own, against a `DebugController` that serves the host's Lua state; the answers and
/// events go back the same way. `{"m":"dap-end"}` says the editor went away: its
/// breakpoints go and a stopped feature goes on. Nothing is hooked until an editor's first
/// message comes. Files served are named `dev:PLUGIN/PATH`; the server turns them into the
/// editor's paths and back.
extension DevServerConnection {
    func relayDebug(_ message: DevServerMessages.Message) {
        if message.m == "dap-end" {
            debugging.withLock { $0?.mailbox }?.close()
            return
        }
        guard let request = message.object["msg"] else { return }
        let mailbox = debugging.withLock { current -> DAPMailbox in
            if let current, !current.mailbox.isClosed { return current.mailbox }
            let made = current == nil
            let controller = current?.controller ?? DebugController(name: ProcessInfo.processInfo.processName)
            let mailbox = DAPMailbox { [weak self] reply in
                guard let json = try? reply.json() else { return }
                self?.sendUntagged(DevServerMessages.dap(json))
            }
            current = (controller, mailbox)
            let thread = Thread { [weak self] in
                // Served once, on the host's executor between its calls; here, not on the
                // link's thread, which must never wait for that executor.
                if made, let host = self?.featureHost { host.perform { _ = controller.serve(host.lua) } }
                let session = DAPSession(connection: mailbox, target: controller)
                controller.attach(session)
                session.run()
            }
            thread.name = "moonflow debugger"
            thread.start()
            return mailbox
        }
        mailbox.deliver(request)
    }
}
