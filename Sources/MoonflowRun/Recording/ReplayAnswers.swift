import LuaKit
import MoonflowLua

/// What answers a replay's service and repository calls and its reads of time and random
/// numbers from the recording, each where it was in the recorded run (`moonflow replay`). A
/// replay that can go back (`--debug`) makes one for each host it loads
/// (`FeatureRun.Options.replayAnswers`): each keeps how far its run got.
package struct ReplayAnswers: Sendable {
    /// Answers each call as recorded, through `gate`.
    package let tap: ServiceTap
    /// Holds each recorded answer until the action it followed has been handled.
    package let gate: ReplayGate
    /// The recorded values of time and random numbers, in order by kind.
    package let reads: (@Sendable (String) -> LuaValue?)?

    package init(tap: ServiceTap, gate: ReplayGate, reads: (@Sendable (String) -> LuaValue?)?) {
        self.tap = tap
        self.gate = gate
        self.reads = reads
    }
}
