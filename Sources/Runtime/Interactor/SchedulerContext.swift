import Streams

/// The three schedulers an interactor uses, as in the seed: where the loop runs, where outputs are
/// delivered, and where handler and effect streams are started.
///
///     let context = SchedulerContext(state: QueueScheduler(label: "feature"), output: QueueScheduler.main)
///     let test = SchedulerContext.immediate   // everything on the caller's thread, in order
///
/// An `ImmediateScheduler` in a slot means "inline, on whichever thread gets there first", still
/// serialized: the loop never runs on two threads at once.
public struct SchedulerContext: Sendable {
    /// Runs `handle`, `reduce` and the effect handler, one action or mutation at a time.
    public let state: any Scheduler
    /// Delivers state changes, effects, traces and errors to observers, in loop order.
    public let output: any Scheduler
    /// Starts handler and effect streams. Time-based operators take their own scheduler.
    public let work: any Scheduler

    /// Creates a context; each slot defaults to the immediate scheduler.
    ///
    /// - Parameters:
    ///   - state: Where the loop runs.
    ///   - output: Where observers are called.
    ///   - work: Where streams are started.
    public init(
        state: any Scheduler = ImmediateScheduler.shared,
        output: any Scheduler = ImmediateScheduler.shared,
        work: any Scheduler = ImmediateScheduler.shared
    ) {
        self.state = state
        self.output = output
        self.work = work
    }

    /// Everything inline and synchronous: the deterministic default (use a `TestScheduler` for time).
    public static let immediate = SchedulerContext()

    var stateIsImmediate: Bool { state is ImmediateScheduler }
    var outputIsImmediate: Bool { output is ImmediateScheduler }
    var workIsImmediate: Bool { work is ImmediateScheduler }
}
