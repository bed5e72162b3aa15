import Foundation
import LuaKit

/// Collects the whole states a `FeatureRun` prints in jsonl (`--state full`):
/// what `moonflow replay` and the inspector's `rerun` compare with a recording.
///
///     let states = PrintedStates()
///     _ = FeatureRun(options: options, input: input, write: states.add).run()
///     states.all   // [{count = 0}, {count = 1}, ...]
public final class PrintedStates: @unchecked Sendable {
    private let lock = NSLock()
    private var states: [LuaValue] = []

    public init() {}

    /// Every state so far, in order.
    public var all: [LuaValue] { lock.withLock { states } }

    /// Takes one printed line; keeps it when it is a `state` event with a whole state.
    public func add(_ line: String) {
        guard line.hasPrefix("{\"event\":\"state\""), let event = try? LuaValue(json: line), let state = event["state"] else { return }
        lock.withLock { states.append(state) }
    }
}
