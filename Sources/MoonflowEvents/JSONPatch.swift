import LuaKit
import MoonflowHost
import MoonflowLua

/// JSON Patch (RFC 6902) between two states, as `moonflow run --state patch`
/// prints them: `add`, `remove` and `replace` operations whose paths are JSON
/// Pointers (RFC 6901) into the JSON form of the state.
///
///     let ops = JSONPatch.diff(from: ["items": ["a"]], to: ["items": ["a", "b"], "n": 1])
///     // [add /items/1 "b", add /n 1]
///     JSONPatch.apply(ops, to: ["items": ["a"]])   // the new state again
///
/// A table is an array when its JSON form is one (keys 1...n, or an empty
/// table that came from or was an array); array positions in paths count
/// from 0. Equal subtrees produce nothing, so a one-field change of a large
/// state is one operation.
public enum JSONPatch {
    public struct Operation: Sendable, Equatable {
        public enum Kind: String, Sendable { case add, remove, replace }
        public let op: Kind
        /// A JSON Pointer: `/items/3/title`.
        public let path: String
        /// The new value (nil for `remove`).
        public let value: LuaValue?

        public init(_ op: Kind, _ path: String, _ value: LuaValue? = nil) {
            self.op = op
            self.path = path
            self.value = value
        }

        /// `{"op":"add","path":"/items/3","value":{...}}`.
        public func json() throws -> String {
            var operation = JSONObjectWriter()
            operation.add("op", op.rawValue)
            operation.add("path", path)
            if let value { try operation.add("value", value, root: "patch\(path)") }
            return operation.text
        }
    }

    /// The operations that turn `old` into `new`.
    public static func diff(from old: LuaValue, to new: LuaValue) -> [Operation] {
        var ops: [Operation] = []
        diff(old, new, path: "", into: &ops)
        return ops
    }

    /// The patch from `old` to `new`: what `--state patch` prints and what the
    /// inspector's `state` frames carry. With `changes` (one reduce's writes,
    /// `LuaFeature.deliveredChanges`), only the changed entries are looked at, so
    /// a one-field change of a large state stays cheap; without them, or when
    /// they do not fit `new`, the states are diffed.
    /// - Returns: nil when there are neither usable changes nor `old`.
    /// With `declared` (the feature's declared `state`), a declared list that was empty is
    /// known to have been `[]`, so the first item written into it is an `add`, not a
    /// replacement of the list.
    public static func patch(
        from old: LuaValue?, to new: LuaValue, changes: [StateChange]? = nil, declared: SchemaType? = nil
    ) -> [Operation]? {
        changes.flatMap { operations(for: $0, in: new, declared: declared) } ?? old.map { diff(from: $0, to: new) }
    }

    /// The declared type at `path` (record fields, list and map items), or nil.
    static func declaredType(_ type: SchemaType?, at path: ArraySlice<LuaValue>) -> SchemaType? {
        var current = type
        for key in path {
            guard let t = current?.required else { return nil }
            switch t {
            case .record: current = t.field(key: key)
            case .list(let item), .map(let item): current = item
            default: return nil
            }
        }
        return current
    }

    /// The operations for one reduce's `changes`, given `new`, the state after
    /// them: each change diffs only its own entry, so a list that grows by one
    /// item costs one operation, not a walk of the list.
    ///
    /// - Returns: nil when a change's path does not lead through `new` (diff the states then).
    public static func operations(
        for changes: [StateChange], in new: LuaValue, declared: SchemaType? = nil
    ) -> [Operation]? {
        var ops: [Operation] = []
        // Writes that left a value as it was (`state.error = nil` on an absent key) change nothing.
        let changes = StateChange.outermost(changes).filter { $0.old != $0.new }
        // The changes by the container they write into, in the order containers first appear.
        var order: [String] = []
        var groups: [String: (parent: LuaTable, changes: [StateChange], list: Bool)] = [:]
        for change in changes {
            guard !change.path.isEmpty else {
                diff(change.old, change.new, path: "", into: &ops)
                continue
            }
            var container = new
            var pointer = ""
            for k in change.path.dropLast() {
                guard case .table(let t) = container else { return nil }
                pointer += "/" + token(k, in: t)
                container = t[k]
            }
            guard case .table(let t) = container else { return nil }
            if groups[pointer] == nil {
                order.append(pointer)
                let list: Bool
                if case .list? = declaredType(declared, at: change.path.dropLast())?.required {
                    list = true
                } else {
                    list = false
                }
                groups[pointer] = (t, [], list)
            }
            groups[pointer]!.changes.append(change)
        }
        for pointer in order {
            let (t, group, list) = groups[pointer]!
            if let entries = entryOperations(group, in: t, at: pointer, declaredList: list) {
                ops += entries
            } else {
                ops.append(Operation(.replace, pointer, .table(t)))
            }
        }
        return ops
    }

    /// The operations for `changes` to the entries of `t` (as it is after them), or
    /// nil when `t` is replaced whole: it may have turned from an array into an
    /// object or back, or its items moved in ways positions cannot say in order.
    private static func entryOperations(
        _ changes: [StateChange], in t: LuaTable, at pointer: String, declaredList: Bool = false
    ) -> [Operation]? {
        func path(_ key: LuaValue) -> String { pointer + "/" + token(key, in: t) }
        let added = changes.filter { $0.old.isNil }, removed = changes.filter { $0.new.isNil }
        let kept = changes.filter { !$0.old.isNil && !$0.new.isNil }
        var ops: [Operation] = []
        if isArray(t) {
            // In place, then appends in order, or pops from the end: the array stays an
            // array (it held items before and holds some after) and positions stay valid.
            let count = Int64(t.array.count)
            var keys: [Int64] = []
            for change in added + removed {
                guard case .integer(let k) = change.path.last else { return nil }
                keys.append(k)
            }
            keys.sort()
            for change in kept {
                guard case .integer(let k) = change.path.last, k >= 1, k <= count else { return nil }
            }
            if !added.isEmpty && !removed.isEmpty { return nil }
            if !added.isEmpty {
                let first = count - Int64(keys.count) + 1
                // Into an empty table only when it is a declared list (it was `[]`, not `{}`).
                guard first >= (declaredList ? 1 : 2), keys == Array(first...count) else { return nil }
            }
            if !removed.isEmpty {
                guard count >= 1, keys == Array((count + 1)...(count + Int64(keys.count))) else { return nil }
            }
            for change in kept { diff(change.old, change.new, path: path(change.path.last!), into: &ops) }
            for k in keys where !added.isEmpty {
                ops.append(Operation(.add, "\(pointer)/\(k - 1)", t.array[Int(k - 1)]))
            }
            for k in keys.reversed() where !removed.isEmpty { ops.append(Operation(.remove, "\(pointer)/\(k - 1)")) }
            return ops
        }
        // An object now; it must have been one before: its keys then (those it holds,
        // less the added, plus the removed) were not empty nor exactly 1...n.
        if t.isEmpty { return nil }
        // Only a write that added or removed a key can have changed the table's kind: the
        // common one-field change does not walk the table's keys.
        if !added.isEmpty || !removed.isEmpty {
            var before = Set(t.hash.keys)
            for i in t.array.indices { before.insert(.integer(Int64(i + 1))) }
            for change in added { before.remove(change.path.last!) }
            for change in removed { before.insert(change.path.last!) }
            if before.isEmpty || (1...before.count).allSatisfy({ before.contains(.integer(Int64($0))) }) { return nil }
        }
        for change in changes {
            let key = change.path.last!
            if change.old.isNil {
                ops.append(Operation(.add, path(key), change.new))
            } else if change.new.isNil {
                ops.append(Operation(.remove, path(key)))
            } else {
                diff(change.old, change.new, path: path(key), into: &ops)
            }
        }
        return ops
    }

    /// The JSON Pointer token for `key` in `t` (array positions count from 0).
    private static func token(_ key: LuaValue, in t: LuaTable) -> String {
        if case .integer(let i) = key, isArray(t) { return String(i - 1) }
        switch key {
        case .string(let s): return escape(s.description)
        case .integer(let i): return String(i)
        default: return escape(key.description)
        }
    }

    /// The patch as a JSON array.
    /// The operations of a patch read from JSON (`[{"op":"replace","path":"/count","value":2}]`).
    /// - Throws: `HostError` naming the operation that is not an add, remove or replace with a path.
    public static func operations(_ patch: LuaValue) throws -> [Operation] {
        guard case .table(let list) = patch, list.hash.isEmpty else {
            throw HostError("a JSON Patch is an array of operations")
        }
        return try list.array.enumerated().map { i, op in
            guard let kind = op["op"]?.stringValue.flatMap(Operation.Kind.init(rawValue:)),
                let path = op["path"]?.stringValue
            else {
                throw HostError("patch operation \(i + 1) needs \"op\" (add, remove or replace) and a string \"path\"")
            }
            return Operation(kind, path, op["value"])
        }
    }

    public static func json(_ ops: [Operation]) throws -> String {
        "[" + (try ops.map { try $0.json() }).joined(separator: ",") + "]"
    }

    private static func diff(_ old: LuaValue, _ new: LuaValue, path: String, into ops: inout [Operation]) {
        guard case .table(let a) = old, case .table(let b) = new else {
            if old != new { ops.append(Operation(.replace, path, new)) }
            return
        }
        if a == b { return }
        switch (isArray(a), isArray(b)) {
        case (true, true):
            let common = min(a.array.count, b.array.count)
            for i in 0..<common { diff(a.array[i], b.array[i], path: "\(path)/\(i)", into: &ops) }
            if b.array.count > common {
                for i in common..<b.array.count { ops.append(Operation(.add, "\(path)/\(i)", b.array[i])) }
            } else {
                for i in stride(from: a.array.count - 1, through: common, by: -1) {
                    ops.append(Operation(.remove, "\(path)/\(i)"))
                }
            }
        case (false, false):
            let ea = entries(a), eb = entries(b)
            for key in ea.keys.sorted() where eb[key] == nil {
                ops.append(Operation(.remove, "\(path)/\(escape(key))"))
            }
            for key in eb.keys.sorted() {
                let child = "\(path)/\(escape(key))"
                if let before = ea[key] {
                    diff(before, eb[key]!, path: child, into: &ops)
                } else {
                    ops.append(Operation(.add, child, eb[key]!))
                }
            }
        default:
            ops.append(Operation(.replace, path, new))
        }
    }

    /// Applies `ops` to `value` (what a client of `--state patch` does).
    /// - Returns: nil when an operation does not fit the value (a bad path).
    public static func apply(_ ops: [Operation], to value: LuaValue) -> LuaValue? {
        var current = value
        for op in ops {
            let tokens = op.path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map {
                unescape(String($0))
            }
            guard let next = apply(op, tokens[...], to: current) else { return nil }
            current = next
        }
        return current
    }

    private static func apply(_ op: Operation, _ tokens: ArraySlice<String>, to value: LuaValue) -> LuaValue? {
        guard let token = tokens.first else {
            return op.op == .remove ? nil : op.value
        }
        guard case .table(var t) = value else { return nil }
        let rest = tokens.dropFirst()
        if isArray(t) {
            guard let i = Int(token), i >= 0 else { return nil }
            if rest.isEmpty {
                switch op.op {
                case .add:
                    guard i <= t.array.count, let v = op.value else { return nil }
                    t.array.insert(v, at: i)
                case .remove:
                    guard i < t.array.count else { return nil }
                    t.array.remove(at: i)
                    if t.array.isEmpty { t.isJSONArray = true }
                case .replace:
                    guard i < t.array.count, let v = op.value else { return nil }
                    t.array[i] = v
                }
                return .table(t)
            }
            guard i < t.array.count, let child = apply(op, rest, to: t.array[i]) else { return nil }
            t.array[i] = child
            return .table(t)
        }
        // Integer keys outside a sequence appear in paths in decimal.
        let key: LuaValue =
            Int64(token).map { t[.integer($0)].isNil ? .string(LuaString(token)) : .integer($0) }
            ?? .string(LuaString(token))
        if rest.isEmpty {
            switch op.op {
            case .add, .replace:
                guard let v = op.value else { return nil }
                t[key] = v
            case .remove:
                guard !t[key].isNil else { return nil }
                t[key] = .nil
            }
            return .table(t)
        }
        guard let child = apply(op, rest, to: t[key]) else { return nil }
        t[key] = child
        return .table(t)
    }

    /// Whether the JSON form of `t` is an array.
    static func isArray(_ t: LuaTable) -> Bool {
        if t.isEmpty { return t.isJSONArray }
        return t.hash.isEmpty
    }

    /// Keys as JSON object keys (integer keys outside a sequence become their decimal form).
    private static func entries(_ t: LuaTable) -> [String: LuaValue] {
        var out: [String: LuaValue] = [:]
        for (i, v) in t.array.enumerated() { out[String(i + 1)] = v }
        for (k, v) in t.hash {
            switch k {
            case .string(let s): out[s.description] = v
            case .integer(let i): out[String(i)] = v
            default: out[k.description] = v
            }
        }
        return out
    }

    private static func escape(_ key: String) -> String {
        key.replacingOccurrences(of: "~", with: "~0").replacingOccurrences(of: "/", with: "~1")
    }

    private static func unescape(_ token: String) -> String {
        token.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
    }
}
