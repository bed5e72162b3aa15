import Foundation
import LuaKit

/// Where a session's messages come from and go: an editor's socket (`DAPConnection`), or
/// a relay (`DAPMailbox`: `moonflow serve --debug` hands an editor's messages to an app
/// over the dev-server link).
package protocol DAPChannel: AnyObject, Sendable {
    /// The next message, or nil once the other end is gone.
    func receive() throws -> LuaValue?
    /// Writes one message; throws when the other end is gone.
    func send(_ message: LuaValue) throws
    /// Ends the channel; a `receive` under way returns nil.
    func close()
}

extension DAPConnection: DAPChannel {}

/// A channel fed from outside: `deliver` queues what the editor sent, `receive` takes it in
/// order, and what the session sends goes to `outgoing`. `close` (the editor went away)
/// ends the session's `receive`.
///
///     let mailbox = DAPMailbox { message in link.send(["m": "dap", "msg": message]) }
///     Thread { DAPSession(connection: mailbox, target: controller).run() }.start()
///     mailbox.deliver(initializeRequest)
package final class DAPMailbox: DAPChannel, @unchecked Sendable {
    private let condition = NSCondition()
    private var queue: [LuaValue] = []
    private var closed = false
    private let outgoing: @Sendable (LuaValue) -> Void

    package init(outgoing: @escaping @Sendable (LuaValue) -> Void) { self.outgoing = outgoing }

    /// Queues a message from the editor; false once the mailbox is closed.
    @discardableResult
    package func deliver(_ message: LuaValue) -> Bool {
        condition.withLock {
            guard !closed else { return false }
            queue.append(message)
            condition.signal()
            return true
        }
    }

    package var isClosed: Bool { condition.withLock { closed } }

    package func receive() throws -> LuaValue? {
        condition.withLock {
            while queue.isEmpty && !closed { condition.wait() }
            // Not `queue.isEmpty ? nil : …`: `nil` there would be LuaValue's own nil literal.
            guard !queue.isEmpty else { return Optional<LuaValue>.none }
            return queue.removeFirst()
        }
    }

    package func send(_ message: LuaValue) throws {
        guard !isClosed else { throw DAPListener.Failure(description: "the editor went away") }
        outgoing(message)
    }

    package func close() {
        condition.withLock {
            closed = true
            condition.broadcast()
        }
    }
}
