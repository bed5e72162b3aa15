import Foundation
import LuaKit
import MoonflowEvents
import MoonflowHost

/// Collects the whole states a `FeatureRun` prints in jsonl (`--state full`):
/// what `moonflow replay` and the inspector's `rerun` compare with a recording.
///
///     let states = PrintedStates()
///     _ = FeatureRun(options: options, input: input, write: states.add).run()
///     states.all   // [{count = 0}, {count = 1}, ...]
package final class PrintedStates: @unchecked Sendable {
    private let lock = NSLock()
    private var states: [LuaValue] = []

    package init() {}

    /// Every state so far, in order.
    package var all: [LuaValue] { lock.withLock { states } }

    /// Takes one printed line; keeps it when it is a `state` event with a whole state.
    package func add(_ line: String) {
        guard line.hasPrefix("{\"event\":\"state\""), let event = try? LuaValue(json: line), let state = event["state"] else { return }
        lock.withLock { states.append(state) }
    }
}

extension FeatureRun {
    /// The feature at `path` run again, as its code is now, on these input lines: on the
    /// virtual clock, its declared repositories fresh in memory; every state it gives, in
    /// order. What the inspector's `rerun` and `toggle` compare with the run they watch.
    @Sendable package static func rerun(path: String, inputLines: [String]) -> [LuaValue] {
        var options = FeatureRun.Options(path: path)
        options.clock = .virtual
        options.format = .jsonl
        options.repositoryStorage = nil
        var lines = inputLines.makeIterator()
        let states = PrintedStates()
        _ = FeatureRun(options: options, input: InputLines(interactive: false, name: "rerun") { lines.next() }, write: states.add).run()
        return states.all
    }
}
