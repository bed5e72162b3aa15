import LuaKit
import Runtime
import Streams

/// The running streams a feature's handlers marked `env.cancellable(id, stream)`, by id, so
/// that `env.cancel(id)` returned by any handler of the same feature stops them. Ids are the
/// feature's own: each child of an `mf.compose` has its own table, and a composite reaches a
/// child's id by routing it an action whose handler cancels it.
///
/// **Threading:** a stream starts and ends on the state executor, where `cancel` runs too;
/// the table is behind a lock all the same (`finish` of a test store may ask from another
/// thread), and a stream is stopped outside it.
final class Cancellables: Sendable {
    private struct Live {
        let id: String
        let stop: @Sendable () -> Void
    }

    private let table = Locked<(next: Int, live: [Int: Live])>((0, [:]))

    /// `inner` marked with `id`: while it runs, `cancel(id)` disposes of it (a timer, a
    /// service call whose answer has not re-entered) and completes it, so the stream that
    /// holds it goes on (a `merge`) or ends (the handler's own stream).
    func marking(_ inner: Producer<LuaValue>, with id: String) -> Producer<LuaValue> {
        Producer { [self] observer, lifetime in
            let running = SerialDisposable()
            let key = table.withLock { table in
                table.next += 1
                table.live[table.next] = Live(
                    id: id,
                    stop: {
                        running.dispose()
                        observer.sendCompleted()
                    })
                return table.next
            }
            _ = lifetime.observeEnded { [self] in table.withLock { _ = $0.live.removeValue(forKey: key) } }
            _ = lifetime.add(running)
            running.inner = inner.start(observer)
        }
    }

    /// Stops every running stream marked with one of `ids`.
    /// - Returns: the ids that had a stream running, in the order given.
    func cancel(_ ids: [String]) -> [String] {
        let doomed: [(String, Live)] = table.withLock { table in
            var doomed: [(String, Live)] = []
            for (key, live) in table.live.sorted(by: { $0.key < $1.key }) where ids.contains(live.id) {
                table.live[key] = nil
                doomed.append((live.id, live))
            }
            return doomed
        }
        for (_, live) in doomed { live.stop() }
        let hit = Set(doomed.map(\.0))
        return ids.filter { hit.contains($0) }
    }

    /// The ids with a stream running, sorted, each once.
    var liveIDs: [String] { Set(table.withLock { $0.live.values.map(\.id) }).sorted() }
}

extension LuaFeature {
    /// Puts `cancellable(id, stream)` and `cancel(id, ...)` into `env` (made by the host before
    /// the feature; a reload's new `env` gets them again from `rebind`).
    func installCancellation(in env: LuaRef) throws {
        let cancellable: LuaFunction = { [weak self] slots in
            guard let self else { return [] }
            let id = try Self.cancelID(slots, 1, "env.cancellable")
            let stream = try self.bridge.stream(slots, 2, "env.cancellable")
            return [self.bridge.push(self.cancellables.marking(stream, with: id))]
        }
        let cancel: LuaFunction = { [weak self] slots in
            guard let self else { return [] }
            guard slots.count > 0 else {
                throw LuaArgumentError(message: "env.cancel needs the id to cancel: env.cancel(\"more\")")
            }
            let ids = try (1...slots.count).map { try Self.cancelID(slots, $0, "env.cancel") }
            let cause = self.cancellingCause
            let stop = Producer<LuaValue> { [weak self] observer, _ in
                self?.cancel(ids, cause: cause)
                observer.sendCompleted()
            }
            return [self.bridge.push(stop)]
        }
        try bridge.lua.rawSet(env, "cancellable", .function(cancellable))
        try bridge.lua.rawSet(env, "cancel", .function(cancel))
    }

    private static func cancelID(_ slots: LuaSlots, _ i: Int, _ function: String) throws -> String {
        guard slots.typeName(i) == "string", let id = try slots.value(i).stringValue, !id.isEmpty else {
            throw LuaArgumentError(
                message:
                    "\(function): argument \(i) must be a non-empty string naming the work (\"more\"), got \(slots.typeName(i) == "string" ? "an empty string" : slots.typeName(i))"
            )
        }
        return id
    }

    /// The action whose handler (or effect handler) runs now, with its number: what a
    /// `cancel` stream made now names as its cause.
    var cancellingCause: (action: FeatureAction, id: Int)? {
        if let handling { return handling }
        if let action = interactor.actionBeingReduced { return (action, interactor.actionIDAtWork) }
        return nil
    }

    /// Stops the streams marked with `ids` and reports a `cancelled` event for each id that had
    /// one running. On the state executor.
    func cancel(_ ids: [String], cause: (action: FeatureAction, id: Int)?) {
        for id in cancellables.cancel(ids) {
            let event = FeatureEvent.cancelled(id: id, cause: cause?.action.value, from: effectSource)
            if let cause {
                delivering(cause: cause.action, id: cause.id) { outlet.send(.cancelled, event) }
            } else {
                outlet.send(.cancelled, event)
            }
        }
    }

    /// The ids of `env.cancellable` streams still running (`finish` of a test store names them).
    package var liveCancellableIDs: [String] { cancellables.liveIDs }
}
