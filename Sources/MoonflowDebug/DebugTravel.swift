import Foundation
import LuaKit

/// Going back in a run (`stepBack`, `reverseContinue`), as the debugger keeps it. A run that
/// can be repeated exactly (the virtual clock, with its input kept) counts every line event
/// of the plugins' files (`LuaState.countLines`): a stop is at a count. Going back abandons
/// the stopped thread (`LuaResume.travel`: its stack unwinds to the host's call, and the run
/// leaves that state behind) and runs the feature again from its load, in a new state, with
/// the same inputs, its hook counting and stopping nowhere, in two passes: the first runs to
/// the count it left (the mark), noting where to go (the last line at the stopped depth or
/// outer, or the last breakpoint hit that stopped), the second to that count, where it stops.
/// A re-run from the load is exact: every local, upvalue and module-level value is as it was.
package struct DebugTravel: Sendable {
    /// What the editor asked.
    package enum Kind: Sendable, Equatable {
        /// To the line before: the last line run at the stopped frame's depth or outer.
        case stepBack
        /// To the last breakpoint hit before that stopped (or the run's first line).
        case reverseContinue
        /// To the start of the `n`th frame the editor shows (from 1, the innermost): the first
        /// line of that call (a handler's, `reduce`'s, any function of a plugin's file), with
        /// its arguments, upvalues and the state as they were when it was called.
        case restartFrame(Int)

        var request: String {
            switch self {
            case .stepBack: "stepBack"
            case .reverseContinue: "reverseContinue"
            case .restartFrame(let n): "restartFrame (frame \(n))"
            }
        }
    }

    /// Where a thread stopped: its line events counted, its stack's depth, and how deep each
    /// frame the editor shows is (innermost first).
    struct Position: Sendable, Equatable {
        let count: Int64
        let depth: Int
        /// The path the counted lines took to it (`LuaStop.trail`).
        var trail: UInt64 = 0
        var frameDepths: [Int] = []
        /// In a copy of the run opened at an inspector's step (`DebugController.open(copy:at:)`).
        var inCopy = false
    }

    /// A way back under way: the pass to the mark, then the one to the target.
    struct Journey: Sendable {
        let kind: Kind
        /// Where the run stopped when the editor asked (the first pass's mark); 0 once passed.
        var mark: Int64
        let depth: Int
        /// The trail the run had at the mark: the first pass must come to the mark by it.
        var markTrail: UInt64 = 0
        /// Where the second pass stops; 0 during the first. And the trail the first pass had
        /// there (nil: not known), which the second must have too.
        var seekTo: Int64 = 0
        var seekTrail: UInt64?
        /// The `stopped` reason at the end.
        var reason: String {
            switch kind {
            case .stepBack: "step"
            case .reverseContinue: seekTo == 1 && noHit ? "entry" : "breakpoint"
            case .restartFrame: "restart"
            }
        }
        /// The first pass looks for the start of the frame `depth` deep (`restartFrame`).
        var seeksEntry: Bool {
            if case .restartFrame = kind { return true }
            return false
        }
        var noHit = false
    }

    /// Why the editor cannot go back from here.
    package struct Refusal: Error, CustomStringConvertible {
        package let description: String
    }

    /// Abandons the run and repeats it (the run's driver); nil: the run cannot be repeated.
    var rerun: (@Sendable () -> Void)?
    /// Said instead of `notRepeatable` when the run gave its own reason.
    var refusal: String?
    /// The files the run loaded, as they were: an edit since makes a re-run another run.
    var sources: LoadedSources?
    var stopped: Position?
    var journey: Journey?
    /// The last breakpoint hit that stopped before the mark, during the first pass, and its trail.
    private var lastHit: Int64 = 0
    private var lastHitTrail: UInt64 = 0

    /// What a stop says when a re-run came to the count it went back to by another path.
    static func diverged(at count: Int64) -> String {
        "going back could not come back exactly: run again from its load, the code took another path before line event \(count), so it is not the run it was. It depends on something a re-run does not repeat: the order pairs gives (Lua varies it from one Lua state to the next), a file or variable it reads, a clock of its own. This stop is in the re-run, at that count; to go back exactly, make that code not depend on it (sort the keys before going through them)"
    }

    /// Why a run on the real clock cannot go back, and what to do instead.
    package static let notRepeatable =
        "needs a run Moonflow can repeat exactly, which the real clock is not: run the actions on the virtual clock (moonflow run PATH --clock virtual --actions FILE --debug PORT), or a spec (moonflow test SPEC --debug PORT); or record it (moonflow run PATH --record FILE) and debug its replay (moonflow replay FILE --debug PORT)"

    mutating func start(_ kind: Kind) throws(Refusal) {
        let name = kind.request
        if stopped?.inCopy == true {
            throw Refusal(
                description:
                    "\(name): this stop is in a copy of the run opened at an inspector's step, which cannot go back; open an earlier step from the inspector instead"
            )
        }
        guard rerun != nil else { throw Refusal(description: "\(name) \(refusal ?? Self.notRepeatable)") }
        if let changed = sources?.changed() {
            throw Refusal(
                description:
                    "\(name): \(changed) since the run started, and going back runs the code again from its load, which would no longer be this run; undo the edit to go back, or start the run again to debug the code as it is now"
            )
        }
        guard let stopped, stopped.count > 0 else {
            throw Refusal(
                description: "\(name) needs a stop at a line of a plugin's file; this stop has none to go back from")
        }
        var depth = stopped.depth
        if case .restartFrame(let frame) = kind {
            guard (1...stopped.frameDepths.count).contains(frame) else {
                throw Refusal(
                    description:
                        "\(name): the stopped stack shows frames 1 to \(stopped.frameDepths.count); take a frameId from stackTrace"
                )
            }
            depth = stopped.frameDepths[frame - 1]
        } else if stopped.count <= 1 {
            throw Refusal(
                description: "\(name): the run is at its first line (line event 1); there is nothing before it")
        }
        journey = Journey(kind: kind, mark: stopped.count, depth: depth, markTrail: stopped.trail)
        lastHit = 0
        lastHitTrail = 0
    }

    /// A breakpoint hit that would have stopped, at `count` (with `trail`), on the first pass.
    mutating func hit(_ count: Int64, trail: UInt64) {
        guard let journey, journey.mark > 0, count < journey.mark else { return }
        lastHit = count
        lastHitTrail = trail
    }

    /// The first pass reached its mark: `found` is the last line before it at the depth or
    /// outer (or, restarting a frame, that frame's first line), with the trail there.
    mutating func marked(found: Int64, trail: UInt64) {
        guard var journey else { return }
        switch journey.kind {
        case .stepBack:
            journey.seekTo = found > 0 ? found : journey.mark - 1
            journey.seekTrail = found > 0 ? trail : nil
        case .restartFrame:
            journey.seekTo = found > 0 ? found : journey.mark
            journey.seekTrail = found > 0 ? trail : journey.markTrail
        case .reverseContinue:
            journey.seekTo = lastHit > 0 ? lastHit : 1
            journey.seekTrail = lastHit > 0 ? lastHitTrail : nil
            journey.noHit = lastHit == 0
        }
        journey.mark = 0
        self.journey = journey
    }
}
