import Foundation
import LuaKit
import MoonflowLua

/// A feature's events as a test reads them: each with its virtual time and
/// the action that started it. Appended from any thread.
///
///     let log = EventLog()
///     feature.outlet.add { [weak feature] event in log.append(event, t: clock.now, cause: feature?.eventCause) }
///     log.lines   // ["0 state#0 {\"count\":0}", "0 action {\"type\":\"increment\"}", ...]
public final class EventLog: @unchecked Sendable {
    public struct Entry: Sendable {
        /// Milliseconds on the run's clock.
        public let t: Int
        public let event: FeatureEvent
        /// The action whose handling led to it (mutations, states, effects, errors).
        public let cause: LuaValue?
    }

    private let lock = NSLock()
    private var items: [Entry] = []

    public init() {}

    public func append(_ event: FeatureEvent, t: Int, cause: LuaValue? = nil) {
        lock.lock(); items.append(Entry(t: t, event: event, cause: cause)); lock.unlock()
    }

    /// Every entry so far, in order.
    public var all: [Entry] { lock.lock(); defer { lock.unlock() }; return items }

    public func clear() { lock.lock(); items = []; lock.unlock() }

    /// Every event as one short line: `100 mutation#2 {"n":1,"type":"add"}`, `0 error boom`.
    public var lines: [String] { all.map { EventLog.line($0.event, t: $0.t) } }

    /// Errors, with their `file:line`.
    public var errors: [(message: String, location: String?)] {
        all.compactMap { if case .error(let m, let w) = $0.event { (m, w) } else { nil } }
    }

    /// Log lines (interactor failures, a plugin's `print`).
    public var logs: [(message: String, location: String?)] {
        all.compactMap { if case .log(let m, let w) = $0.event { (m, w) } else { nil } }
    }

    /// Reduced mutations, each with the action that started it.
    public var mutations: [(mutation: LuaValue, cause: LuaValue?)] {
        all.compactMap { if case .mutation(let m, _) = $0.event { (m, $0.cause) } else { nil } }
    }

    /// A value as compact JSON with sorted keys (its description if it cannot be JSON).
    public static func json(_ v: LuaValue) -> String { FeatureEvent.sortedJSON(v) }

    /// The first line of a message (tracebacks left out).
    public static func firstLine(_ s: String) -> String { FeatureEvent.firstLine(s) }

    /// One event as a line: time, kind (with `seq`), and the value as JSON.
    public static func line(_ event: FeatureEvent, t: Int) -> String { event.line(at: t) }
}
