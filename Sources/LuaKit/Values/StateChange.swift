/// One entry a reducer changed: where, what it was, what it is now.
///
///     feature.outlet.add { event in
///         guard case .state = event, let changes = feature.deliveredChanges else { return }
///         if changes.contains(where: { $0.topLevelKey == "count" }) { ... }
///     }
public struct StateChange: Sendable, Equatable {
    /// Keys from the state's root (`["items", 3, "done"]`); empty for the whole state.
    public let path: [LuaValue]
    /// The value before (`.nil`: the entry is new).
    public let old: LuaValue
    /// The value now (`.nil`: the entry was removed).
    public let new: LuaValue

    public init(path: [LuaValue], old: LuaValue, new: LuaValue) {
        self.path = path
        self.old = old
        self.new = new
    }

    /// The top-level field this change is under; nil when the whole state changed.
    public var topLevelKey: LuaValue? { path.first }
}

extension StateChange {
    /// `changes` without those inside another change's path (the outer one's old and new
    /// values already hold them), sorted by path as state diffs list them.
    package static func outermost(_ changes: [StateChange]) -> [StateChange] {
        if changes.count < 2 { return changes }
        let sorted = changes.sorted { a, b in
            for (x, y) in zip(a.path, b.path) where x != y { return LuaValue.keyOrder(x, y) }
            return a.path.count < b.path.count
        }
        var out: [StateChange] = []
        for change in sorted {
            if let last = out.last, change.path.starts(with: last.path) { continue }
            out.append(change)
        }
        return out
    }
}
