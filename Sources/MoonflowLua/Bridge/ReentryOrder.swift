import Streams

/// On a virtual clock, Swift services' results re-enter in the order the calls
/// were made, whatever order their threads finish in, and only when the clock
/// is settled (`FeatureHost.settle`), never in the middle of a `send`: a call's
/// events wait until every earlier call on the same clock has delivered its
/// first event (or ended), then wait in `parked` until the host releases them.
/// So two `select`s sent in a row are received in the order sent, and a
/// failing spec reads the same on every run. A long-lived stream (an
/// observation) holds back nothing once its first value has come.
///
///     let ticket = order.ticket()
///     order.pass(ticket, opening: true) { deliver() }   // parked once earlier calls have answered
///     order.release()                                    // settle: what is parked re-enters, in call order
final class ReentryOrder: @unchecked Sendable {
    private struct State {
        var next = 0
        /// The lowest ticket whose call has not answered yet.
        var frontier = 0
        var answered: Set<Int> = []
        var waiting: [Int: [@Sendable () -> Void]] = [:]
        var parked: [@Sendable () -> Void] = []
    }
    private let state = Locked(State())

    /// A place in line for a call starting now.
    func ticket() -> Int {
        state.withLock { s in
            defer { s.next += 1 }; return s.next
        }
    }

    /// Parks `deliver` (an event of call `ticket`) now if every earlier call has
    /// answered, else when they have; `opening` marks the call as answered (its
    /// first event, or its end). What this lets through is parked in ticket order.
    func pass(_ ticket: Int, opening: Bool, _ deliver: (@Sendable () -> Void)?) {
        state.withLock { s in
            if let deliver { s.waiting[ticket, default: []].append(deliver) }
            if opening { s.answered.insert(ticket) }
            var out: [@Sendable () -> Void] = []
            // Tickets before the frontier are through: their events pass at once.
            if ticket < s.frontier, let own = s.waiting.removeValue(forKey: ticket) { out += own }
            while s.answered.contains(s.frontier) {
                s.answered.remove(s.frontier)
                if let own = s.waiting.removeValue(forKey: s.frontier) { out += own }
                s.frontier += 1
            }
            s.parked += out
        }
    }

    /// Whether something is parked, waiting for `release`.
    var hasParked: Bool { state.withLock { !$0.parked.isEmpty } }

    /// Runs what is parked, in call order.
    func release() {
        let parked: [@Sendable () -> Void] = state.withLock { s in
            defer { s.parked = [] }; return s.parked
        }
        for deliver in parked { deliver() }
    }
}
