import Foundation
import LuaKit

/// What a session sends, in the order it was posted, written to the editor by a thread of
/// the outbox's own: a feature that posts a `stopped` or a log point's `output` never
/// waits on a socket, so an editor that stops reading cannot freeze the run. Messages are
/// numbered (`seq`) as they are posted. Responses and events other than `output` are all
/// kept (the protocol bounds them: one response a request, a `stopped` only after a
/// `continue`); `output` events past `maxOutput` waiting are dropped and counted, and the
/// editor is told how many when it reads again.
///
///     let outbox = DAPOutbox(connection)
///     outbox.post(["type": "event", "event": "output", …], droppable: true)
///     outbox.finish()   // written out (or given up on after a wait), then the channel closed
final class DAPOutbox: @unchecked Sendable {
    /// The most `output` events waiting to be written; more are dropped and counted.
    static let maxOutput = 1000
    private let channel: any DAPChannel
    private let condition = NSCondition()
    private var queue: [(message: LuaValue, droppable: Bool)] = []
    private var waitingOutput = 0
    private var dropped = 0
    private var seq = 0
    private var writing = false
    private var closed = false
    /// Where the count of dropped lines goes as well (the run's log).
    private let log: @Sendable (String) -> Void

    /// Whether the writer thread was started: at the first post, so a connection that
    /// sends nothing costs no thread of its own here.
    private var started = false

    init(_ channel: any DAPChannel, log: @escaping @Sendable (String) -> Void = { _ in }) {
        self.channel = channel
        self.log = log
    }

    /// Queues a message, numbered now; false when it was dropped (a `droppable` one past
    /// the bound) or the outbox is closed.
    @discardableResult
    func post(_ fields: [String: LuaValue], droppable: Bool = false) -> Bool {
        condition.withLock {
            guard !closed else { return false }
            if droppable {
                guard waitingOutput < Self.maxOutput else {
                    dropped += 1
                    return false
                }
                tellDropped()
            }
            append(fields, droppable: droppable)
            if !started {
                started = true
                let thread = Thread { [self] in writeAll() }
                thread.name = "moonflow-debug-writer"
                thread.start()
            }
            condition.broadcast()
            return true
        }
    }

    /// Queues the count of lines dropped, if any were (under the lock, with room for it).
    private func tellDropped() {
        guard dropped > 0 else { return }
        let notice =
            "moonflow: \(dropped) line\(dropped == 1 ? "" : "s") of log-point output dropped: the editor did not read them in time\n"
        log(notice)
        append(
            ["type": "event", "event": "output", "body": ["category": "important", "output": LuaValue(notice)]],
            droppable: true)
        dropped = 0
    }

    private func append(_ fields: [String: LuaValue], droppable: Bool) {
        seq += 1
        var message = fields
        message["seq"] = LuaValue(seq)
        queue.append((LuaValue(message), droppable))
        if droppable { waitingOutput += 1 }
    }

    private func writeAll() {
        while true {
            let next: (message: LuaValue, droppable: Bool)? = condition.withLock {
                while queue.isEmpty && !closed { condition.wait() }
                guard !queue.isEmpty else { return nil }
                writing = true
                return queue.removeFirst()
            }
            guard let next else { return }
            let sent = (try? channel.send(next.message)) != nil
            condition.withLock {
                writing = false
                if next.droppable { waitingOutput -= 1 }
                if !sent { closed = true; queue.removeAll(); waitingOutput = 0 }
                // The editor reads again: once what waited is written, it hears what it missed.
                if sent, queue.isEmpty { tellDropped() }
                condition.broadcast()
            }
            if !sent { return }
        }
    }

    /// Waits until what is queued has been written, at most `wait` seconds (an editor that
    /// does not read is not waited for longer).
    func drain(wait: TimeInterval = 2) {
        let deadline = Date(timeIntervalSinceNow: wait)
        condition.withLock {
            while started && (!queue.isEmpty || writing) && !closed && condition.wait(until: deadline) {}
        }
    }

    /// Writes what is queued (`drain`), then closes the channel: nothing is posted after.
    func finish(wait: TimeInterval = 2) {
        drain(wait: wait)
        condition.withLock {
            closed = true
            condition.broadcast()
        }
        channel.close()
    }
}
