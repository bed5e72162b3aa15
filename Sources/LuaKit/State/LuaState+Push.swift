import CLua
import CLuaShim

/// Something Swift can push onto a Lua stack.
public enum LuaPush {
    /// A plain value, copied in.
    case value(LuaValue)
    /// A value already in the state (function, table, userdata).
    case ref(LuaRef)
    /// A Swift object as a userdata of a registered class.
    case object(AnyObject, LuaClass)
    /// A Swift closure as a Lua function.
    case function(LuaFunction)
}

extension LuaPush: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByNilLiteral,
    ExpressibleByBooleanLiteral
{
    public init(stringLiteral value: String) { self = .value(.string(LuaString(value))) }
    public init(integerLiteral value: Int64) { self = .value(.integer(value)) }
    public init(nilLiteral: ()) { self = .value(.nil) }
    public init(booleanLiteral value: Bool) { self = .value(.boolean(value)) }
}

/// Collects the push operations for a list of values so that all of them are
/// built inside one protected C call (allocation may raise; Swift never sees it).
struct PushBuilder {
    var ops: [mf_op] = []
    var bytes: [UInt8] = []
    var objects: [(index: Int, pointer: UnsafeMutableRawPointer)] = []
    var functions: [(index: Int, box: UnsafeMutableRawPointer)] = []

    init() { ops.reserveCapacity(16) }

    /// Empties the builder, keeping its buffers for the next push.
    mutating func clear() {
        ops.removeAll(keepingCapacity: true)
        bytes.removeAll(keepingCapacity: true)
        objects.removeAll(keepingCapacity: true)
        functions.removeAll(keepingCapacity: true)
    }

    /// Lets go of the objects and function boxes `add` retained, for a push refused before
    /// any of them reached Lua (a later value could not be converted), and empties the builder.
    mutating func discard() {
        releaseObjects(from: 0)
        for (_, box) in functions { Unmanaged<FunctionBox>.fromOpaque(box).release() }
        clear()
    }

    /// Lets go of the objects whose ops come at or after `op`: after a failed push, those
    /// never became userdata (one made before owns its object: its __gc releases it).
    func releaseObjects(from op: Int) {
        for (index, pointer) in objects where index >= op { Unmanaged<AnyObject>.fromOpaque(pointer).release() }
    }

    mutating func add(_ push: LuaPush, state: LuaState) throws {
        switch push {
        case .value(let v): try add(v, depth: 0)
        case .ref(let r):
            ops.append(mf_op(code: Int32(MF_OP_REF.rawValue), a: 0, i: try r.index(in: state), d: 0, s: nil, len: 0))
        case .object(let object, let cls):
            let pointer = Unmanaged.passRetained(object as AnyObject).toOpaque()
            objects.append((ops.count, pointer))
            ops.append(
                mf_op(
                    code: Int32(MF_OP_OBJECT.rawValue), a: 0, i: Int64(try cls.metatableRef(in: state)), d: 0, s: nil,
                    len: 0))
        case .function(let fn):
            // Functions are pushed by a separate protected call; mark the slot.
            let box = Unmanaged.passRetained(FunctionBox(fn, state: state)).toOpaque()
            functions.append((ops.count, box))
            ops.append(mf_op(code: Int32(MF_OP_NIL.rawValue), a: 1, i: 0, d: 0, s: nil, len: 0))
        }
    }

    mutating func add(_ value: LuaValue, depth: Int) throws {
        switch value {
        case .nil: ops.append(mf_op(code: Int32(MF_OP_NIL.rawValue), a: 0, i: 0, d: 0, s: nil, len: 0))
        case .boolean(let b):
            ops.append(mf_op(code: Int32(MF_OP_BOOL.rawValue), a: 0, i: b ? 1 : 0, d: 0, s: nil, len: 0))
        case .integer(let i): ops.append(mf_op(code: Int32(MF_OP_INT.rawValue), a: 0, i: i, d: 0, s: nil, len: 0))
        case .number(let d): ops.append(mf_op(code: Int32(MF_OP_NUM.rawValue), a: 0, i: 0, d: d, s: nil, len: 0))
        case .string(let s):
            ops.append(
                mf_op(code: Int32(MF_OP_STR.rawValue), a: 0, i: Int64(bytes.count), d: 0, s: nil, len: s.bytes.count))
            bytes.append(contentsOf: s.bytes)
        case .table(let t):
            guard depth < LuaState.maxDepth else {
                throw LuaError.conversion(path: "value", reason: "nested deeper than \(LuaState.maxDepth) levels")
            }
            ops.append(
                mf_op(
                    code: Int32(MF_OP_TABLE.rawValue), a: Int32(clamping: t.array.count), i: Int64(t.hash.count), d: 0,
                    s: nil, len: 0))
            for (offset, element) in t.array.enumerated() {
                try add(element, depth: depth + 1)
                ops.append(mf_op(code: Int32(MF_OP_SETI.rawValue), a: 0, i: Int64(offset + 1), d: 0, s: nil, len: 0))
            }
            for (key, element) in t.hash where !element.isNil {
                let key = LuaTable.normalize(key)
                if key.isNil { continue }
                if case .number(let d) = key, d.isNaN {
                    throw LuaError.conversion(path: "value", reason: "NaN cannot be a table key")
                }
                try add(key, depth: depth + 1)
                try add(element, depth: depth + 1)
                ops.append(mf_op(code: Int32(MF_OP_SET.rawValue), a: 0, i: 0, d: 0, s: nil, len: 0))
            }
            if t.isJSONArray && t.isEmpty {
                ops.append(mf_op(code: Int32(MF_OP_ARRAYMT.rawValue), a: 0, i: 0, d: 0, s: nil, len: 0))
            }
        }
    }
}

extension LuaState {
    /// Deepest nesting that crosses the bridge in either direction.
    package static let maxDepth = 200

    /// Pushes `values` on `L`'s stack. Pushes nothing and throws on failure.
    func push(_ values: [LuaPush], on L: OpaquePointer) throws {
        if values.isEmpty { return }
        if try pushDirectly(values, on: L) { return }
        if try pushSmall(values, on: L) { return }
        try withBuilder { builder in
            do {
                for v in values { try builder.add(v, state: self) }
            } catch {
                builder.discard()
                throw error
            }
            try push(&builder, on: L)
        }
    }

    func push(_ value: LuaValue, on L: OpaquePointer) throws {
        try withBuilder { builder in
            try builder.add(value, depth: 0)
            try push(&builder, on: L)
        }
    }

    /// Lends the kept builder (or a new one if it is lent already), cleared.
    private func withBuilder(_ body: (inout PushBuilder) throws -> Void) throws {
        var builder = scratchBuilder ?? PushBuilder()
        scratchBuilder = nil
        builder.clear()
        defer { scratchBuilder = builder }
        try body(&builder)
    }

    /// Pushes `values` without a protected call when every one is a registry reference or a
    /// value that needs no allocation in Lua (nil, a boolean, a number): those pushes cannot
    /// raise once the stack has room. Returns false, having pushed nothing, otherwise.
    /// Stack effect: pushes `values.count` (or nothing).
    private func pushDirectly(_ values: [LuaPush], on L: OpaquePointer) throws -> Bool {
        for value in values {
            switch value {
            case .value(.nil), .value(.boolean), .value(.integer), .value(.number): continue
            case .ref(let r): _ = try r.index(in: self)
            default: return false
            }
        }
        guard mf_checkstack(L, Int32(values.count)) != 0 else { throw LuaError.memory(limit: memoryLimit) }
        for value in values {
            switch value {
            case .value(.boolean(let b)): lua_pushboolean(L, b ? 1 : 0)
            case .value(.integer(let i)): lua_pushinteger(L, i)
            case .value(.number(let d)): lua_pushnumber(L, d)
            case .ref(let r): mf_rawgeti_registry(L, lua_Integer(r.ref))
            default: lua_pushnil(L)
            }
        }
        return true
    }

    /// Pushes `values` in one protected call of operations written to the stack, not to the
    /// kept builder, when each is a registry reference, a scalar, a string, or a table of
    /// string keys and such values (what an action is), and all of them fit in 16 operations
    /// and 256 bytes (on the stack: a larger temporary goes to the heap): the builder's generality (nested tables, objects, functions, a buffer
    /// kept between pushes) cost ~2,200 instructions of each counter action (`scripts/bench calls`).
    /// Returns false, having pushed nothing, otherwise. Stack effect: pushes `values.count` (or nothing).
    private func pushSmall(_ values: [LuaPush], on L: OpaquePointer) throws -> Bool {
        try withUnsafeTemporaryAllocation(of: mf_op.self, capacity: 16) { ops in
            try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 256) { bytes in
                var encoder = SmallPush(ops: ops, bytes: bytes)
                for value in values {
                    switch value {
                    case .ref(let r):
                        guard encoder.append(MF_OP_REF, i: try r.index(in: self)) else { return false }
                    case .value(let v):
                        guard encoder.add(v) else { return false }
                    case .object, .function:
                        return false
                    }
                }
                var pushed: Int32 = 0
                let status = mf_push_ops(L, ops.baseAddress, Int32(encoder.opCount), &pushed, nil)
                if status != LUA_OK { throw popError(status, L) }
                return true
            }
        }
    }

    /// Runs the builder's operations in one protected call. Stack effect: pushes the values
    /// the builder describes, or nothing when it throws.
    func push(_ builder: inout PushBuilder, on L: OpaquePointer) throws {
        let stack = StackGuard(L)
        // Swift functions first: each is its own protected call, leaving a closure
        // on the stack that the ops then take through a registry ref. The refs are
        // released on every way out, a failure halfway through the functions included.
        var functionRefs: [Int32] = []
        defer { for r in functionRefs { mf_unref(L, r) } }
        for (k, (index, box)) in builder.functions.enumerated() {
            let status = mf_push_swift_function(L, box)
            if status != LUA_OK {
                // This box and those not pushed yet are still Swift's; the pushed ones are
                // their closures' (freed when Lua collects them, now that no ref holds them).
                for (_, unpushed) in builder.functions[k...] { Unmanaged<FunctionBox>.fromOpaque(unpushed).release() }
                builder.releaseObjects(from: 0)
                throw popError(status, L)
            }
            var ref: Int32 = 0
            let rs = mf_ref(L, &ref)
            if rs != LUA_OK {
                for (_, unpushed) in builder.functions[(k + 1)...] {
                    Unmanaged<FunctionBox>.fromOpaque(unpushed).release()
                }
                builder.releaseObjects(from: 0)
                throw popError(rs, L)
            }
            functionRefs.append(ref)
            builder.ops[index] = mf_op(code: Int32(MF_OP_REF.rawValue), a: 0, i: Int64(ref), d: 0, s: nil, len: 0)
        }
        var pushed: Int32 = 0
        var done: Int32 = 0
        let objects = builder.objects
        let status: Int32 = builder.bytes.withUnsafeBufferPointer { raw in
            let base = UnsafeRawPointer(raw.baseAddress).map { $0.assumingMemoryBound(to: CChar.self) }
            return builder.ops.withUnsafeMutableBufferPointer { ops in
                for k in ops.indices {
                    if ops[k].code == Int32(MF_OP_STR.rawValue) {
                        ops[k].s = base.map { $0 + Int(ops[k].i) } ?? UnsafePointer(bitPattern: 1)
                    } else if ops[k].code == Int32(MF_OP_OBJECT.rawValue) {
                        ops[k].s = UnsafePointer(
                            objects.first { $0.index == k }!.pointer.assumingMemoryBound(to: CChar.self))
                    }
                }
                return mf_push_ops(L, ops.baseAddress, Int32(ops.count), &pushed, &done)
            }
        }
        if status != LUA_OK {
            // Objects whose op did not finish never reached Lua and are still ours.
            let error = popError(status, L)
            builder.releaseObjects(from: Int(done))
            throw error  // `stack` puts the top back
        }
        stack.keep()
    }
}

/// The operations of `LuaState.pushSmall`, written into buffers it lends: each method
/// returns false when the value is not one it takes or the buffers are full.
private struct SmallPush {
    let ops: UnsafeMutableBufferPointer<mf_op>
    let bytes: UnsafeMutableBufferPointer<UInt8>
    var opCount = 0
    var byteCount = 0

    mutating func append(
        _ code: mf_opcode, a: Int32 = 0, i: Int64 = 0, d: Double = 0,
        s: UnsafePointer<CChar>? = nil, len: Int = 0
    ) -> Bool {
        guard opCount < ops.count else { return false }
        ops[opCount] = mf_op(code: Int32(code.rawValue), a: a, i: i, d: d, s: s, len: len)
        opCount += 1
        return true
    }

    /// A scalar or a string; a table of string keys and those (not nested, not a list).
    mutating func add(_ value: LuaValue) -> Bool {
        guard case .table(let t) = value else { return scalar(value) }
        guard t.array.isEmpty, !(t.isJSONArray && t.hash.isEmpty) else { return false }
        guard append(MF_OP_TABLE, i: Int64(t.hash.count)) else { return false }
        for (key, element) in t.hash where !element.isNil {
            guard case .string(let k) = key, string(k), scalar(element), append(MF_OP_SET) else { return false }
        }
        return true
    }

    mutating func scalar(_ value: LuaValue) -> Bool {
        switch value {
        case .nil: append(MF_OP_NIL)
        case .boolean(let b): append(MF_OP_BOOL, i: b ? 1 : 0)
        case .integer(let i): append(MF_OP_INT, i: i)
        case .number(let d): append(MF_OP_NUM, d: d)
        case .string(let s): string(s)
        case .table: false
        }
    }

    mutating func string(_ string: LuaString) -> Bool {
        let n = string.bytes.count
        guard byteCount + n <= bytes.count, let base = bytes.baseAddress else { return false }
        let start = base + byteCount
        string.bytes.withUnsafeBufferPointer { source in
            if let from = source.baseAddress { start.update(from: from, count: n) }
        }
        byteCount += n
        return append(MF_OP_STR, s: UnsafeRawPointer(start).assumingMemoryBound(to: CChar.self), len: n)
    }
}
