import CLuaShim

/// Why a debugged Lua thread stopped.
package enum LuaStopReason: Equatable, Sendable {
    /// At a line with a breakpoint (its condition is the debugger's to weigh).
    case breakpoint
    /// A step (in, over or out) ended.
    case step
    /// The debugger asked for a pause.
    case pause
    /// An error no handler catches, before the stack unwinds: its message.
    case error(String)
    /// The count `seek(to:mark:depth:)` named as its mark: the debugger picks where to go back to.
    case mark
    /// The count `seek(to:mark:depth:)` named to stop at.
    case arrived
}

/// What a stopped thread does when the debugger lets it go.
package enum LuaResume: Int32, Sendable {
    case run = 0, stepIn = 1, stepOver = 2, stepOut = 3
    /// The debugger goes back by running the feature again in a new state: this one is
    /// abandoned, its stack unwound by an error no plugin's pcall keeps (`LuaState.travelError`)
    /// to the call the host made, and any later call of it fails at once.
    case travel = 4
}

/// A Lua thread stopped in the debugger's hook. `thread` reads it as a Swift function's
/// caller is read (LuaSlots+Frames.swift), with level 0 the function running the line.
/// Valid only inside the stop function it is given to.
package struct LuaStop {
    package let reason: LuaStopReason
    /// The line it stopped at.
    package let line: Int
    package let thread: LuaSlots
    /// The line events of plugins' files counted up to this one (0 unless counting is on:
    /// `countLines(_:)`), and how deep the thread's stack is: where a re-run comes back to.
    package let count: Int64
    package let depth: Int
    /// The path the counted lines took to here (`mf_debug_position`): a re-run at the same
    /// count with another trail went another way.
    package let trail: UInt64
}

/// The stop function a state keeps while a debugger serves it.
final class DebugHookBox {
    let onStop: (LuaStop) -> LuaResume?
    unowned let state: LuaState
    init(_ onStop: @escaping (LuaStop) -> LuaResume?, state: LuaState) {
        self.onStop = onStop
        self.state = state
    }
}

/// The debugger's hook (debughook.c): breakpoints by file and line, steps, pause, and the
/// stop at an error no handler catches. Nothing is hooked on a state no debugger serves.
extension LuaState {
    /// Serves this state with a debugger from now on: `onStop` runs on the stopped Lua
    /// thread, inside the hook, with the time limit held; it returns what the thread does
    /// next, or nil when it did not stop (a condition that was false, a log point). On the
    /// state's thread, between calls.
    /// - Returns: false when out of memory.
    @discardableResult
    package func startDebugging(_ onStop: @escaping (LuaStop) -> LuaResume?) -> Bool {
        let box = DebugHookBox(onStop, state: self)
        debugHook = box
        return mf_debug_start(L, debugStop, Unmanaged.passUnretained(box).toOpaque()) != 0
    }

    /// Replaces the breakpoint lines of the file at `path` (absolute; a chunk loaded by a
    /// relative name matches the absolute path that ends with it). Any thread; none once closed.
    @discardableResult
    package func setBreakpointLines(path: String, lines: [Int]) -> Bool {
        let lines = lines.map { Int32(clamping: $0) }
        return whileOpen {
            lines.withUnsafeBufferPointer { mf_debug_set_lines(L, path, $0.baseAddress, Int32($0.count)) != 0 }
        } ?? false
    }

    /// Whether every line of a plugin's file is counted (`LuaStop.count`), for going back: a
    /// re-run of the same inputs in a fresh state reaches the same counts at the same lines.
    /// On the state's thread (or the stopped one).
    package func countLines(_ on: Bool) { _ = whileOpen { mf_debug_count_lines(L, on ? 1 : 0) } }

    /// On the way to a point of a re-run: stop (`.arrived`) at line event `to`; at line event
    /// `mark`, stop with `.mark`, `foundBeforeMark` then naming the last line event before it
    /// whose stack was `depth` deep or less; with `entry`, the first line event of the last
    /// call entered `depth` deep (the start of the frame that is there at the mark). 0: none.
    /// On the state's thread (or the stopped one).
    package func seek(to: Int64, mark: Int64 = 0, depth: Int = 0, entry: Bool = false) {
        _ = whileOpen { mf_debug_seek(L, to, mark, Int32(clamping: depth), entry ? 1 : 0) }
    }

    /// See `seek(to:mark:depth:entry:)`: 0 when no line event before the mark was that shallow;
    /// with the trail there (`LuaStop.trail`).
    package var foundBeforeMark: (count: Int64, trail: UInt64) {
        whileOpen {
            var trail: UInt64 = 0
            let count = mf_debug_found(L, &trail)
            return (count, trail)
        } ?? (0, 0)
    }

    /// The text of the error that unwinds an abandoned state (`LuaResume.travel`).
    package static let travelError = MF_TRAVEL_ERROR

    /// Stops at the next line of a plugin's file that runs. Any thread; none once closed.
    package func pauseForDebugger() { _ = whileOpen { mf_debug_pause(L) } }

    /// Which errors stop the thread: `uncaught`, those no handler catches (the run reports
    /// them); `caught`, those a plugin's own `pcall`, `xpcall` or `coroutine.resume` catches.
    /// Any thread.
    package func stopOnErrors(uncaught: Bool, caught: Bool) {
        let which = (uncaught ? Int32(MF_ERRORS_UNCAUGHT) : 0) | (caught ? Int32(MF_ERRORS_CAUGHT) : 0)
        _ = whileOpen { mf_debug_stop_on_errors(L, which) }
    }

    /// Which errors stop the thread, as `stopOnErrors` last set: (uncaught, caught). Any thread.
    package var stopsOnErrors: (uncaught: Bool, caught: Bool) {
        let which = whileOpen { mf_debug_errors(L) } ?? 0
        return (which & Int32(MF_ERRORS_UNCAUGHT) != 0, which & Int32(MF_ERRORS_CAUGHT) != 0)
    }

    /// Empties `holder` (the table a debugger's listings and evaluations keep the tables they
    /// show in: `LuaSlots.releaseShown(holder:)`), between calls on the state's thread: the
    /// tables shown so far are no longer kept by it, and refs start from 1 again.
    /// - Throws: `LuaError` when `holder` is not a table of this state.
    package func releaseShown(holder: LuaRef) throws {
        enter(); defer { leave() }
        try LuaSlots(state: self, L: activeL, base: 0, count: 0).releaseShown(holder: holder)
    }
}

private let debugStop: mf_debug_stop_fn = { ctx, L, reason, line, message in
    guard let ctx, let L else { return Int32(MF_NOT_STOPPED) }
    let box = Unmanaged<DebugHookBox>.fromOpaque(ctx).takeUnretainedValue()
    let why: LuaStopReason
    switch Int(reason) {
    case Int(MF_STOP_STEP): why = .step
    case Int(MF_STOP_PAUSE): why = .pause
    case Int(MF_STOP_EXCEPTION): why = .error(message.map { String(cString: $0) } ?? "error")
    case Int(MF_STOP_MARK): why = .mark
    case Int(MF_STOP_ARRIVED): why = .arrived
    default: why = .breakpoint
    }
    mf_budget_hold(L)
    defer { mf_budget_release(L) }
    var depth: Int32 = 0
    var trail: UInt64 = 0
    let count = mf_debug_position(L, &depth, &trail)
    let stop = LuaStop(
        reason: why, line: Int(line), thread: LuaSlots(state: box.state, L: L, base: 0, count: 0), count: count,
        depth: Int(depth), trail: trail)
    return box.onStop(stop)?.rawValue ?? Int32(MF_NOT_STOPPED)
}
