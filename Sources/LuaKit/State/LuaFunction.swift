import CLua
import CLuaShim

/// A Swift closure callable from Lua. It reads its arguments from the slots
/// and returns what to push. A thrown error becomes a Lua error, raised by the
/// C trampoline after this Swift frame has returned, so `pcall` catches it and
/// every Swift object the closure held is released.
///
///     try lua.setGlobal("add", .function { args in
///         [.value(.integer(try args.integer(1) + args.integer(2)))]
///     })
public typealias LuaFunction = (LuaSlots) throws -> [LuaPush]

/// An error a Swift function raises with a specific Lua value (not a message).
public struct LuaRaise: Error, @unchecked Sendable {
    public let value: LuaPush
    public init(_ value: LuaPush) { self.value = value }
}

final class FunctionBox {
    let fn: LuaFunction
    weak var state: LuaState?
    init(_ fn: @escaping LuaFunction, state: LuaState) {
        self.fn = fn
        self.state = state
    }
}

/// The values on a Lua stack from position `base + 1`: a Swift function's
/// arguments or a call's results. Valid only inside the closure it is given to.
public struct LuaSlots {
    public let state: LuaState
    let L: OpaquePointer
    let base: Int32
    /// How many values there are.
    public let count: Int

    init(state: LuaState, L: OpaquePointer, base: Int32, count: Int) {
        self.state = state
        self.L = L
        self.base = base
        self.count = count
    }

    private func index(_ i: Int) -> Int32 { base + Int32(i) }

    /// The slots after the first `n` (slot `n + 1` becomes slot 1): a reader written for
    /// one call's results reads them where another call returned them after values of its own.
    package func dropping(_ n: Int) -> LuaSlots {
        LuaSlots(state: state, L: L, base: base + Int32(min(n, count)), count: max(count - n, 0))
    }

    /// `file:line` of the Lua code that called this Swift function, when known.
    package var callerLocation: String? { callerLocation(level: 1) }

    /// `file:line` of the code `level` calls up from this Swift function (1: its caller,
    /// 2: the caller's caller), when that is Lua code.
    package func callerLocation(level: Int) -> String? {
        var buf = [CChar](repeating: 0, count: 512)
        guard level >= 1, level < 1000, mf_where(L, Int32(level), &buf, buf.count) != 0 else { return nil }
        return String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// `file:line` where the Lua function at position `i` is defined; nil for
    /// anything else (a C function, a table, nothing).
    ///
    ///     slots.definitionLocation(1)   // "plugins/counter/init.lua:21"
    package func definitionLocation(_ i: Int) -> String? {
        guard i >= 1 && i <= count, mf_checkstack(L, 1) != 0 else { return nil }
        var buf = [CChar](repeating: 0, count: 512)
        guard mf_function_where(L, index(i), &buf, buf.count) != 0 else { return nil }
        return String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The Lua type name at position `i` (1-based); `"none"` past the end.
    public func typeName(_ i: Int) -> String {
        guard i >= 1 && i <= count else { return "no value" }
        return String(cString: lua_typename(L, mf_type(L, index(i))))
    }

    public func isNil(_ i: Int) -> Bool { i > count || mf_type(L, index(i)) == LUA_TNIL }
    public func isFunction(_ i: Int) -> Bool { i <= count && mf_type(L, index(i)) == LUA_TFUNCTION }
    public func isTable(_ i: Int) -> Bool { i <= count && mf_type(L, index(i)) == LUA_TTABLE }

    /// Copies the value at `i` into Swift (raw access; see `LuaValue`).
    public func value(_ i: Int, path: @autoclosure () -> String? = nil) throws -> LuaValue {
        guard i >= 1 && i <= count else { return .nil }
        return try state.read(L, index(i), path: path() ?? "argument #\(i)")
    }

    /// Every value, copied.
    public func values() throws -> [LuaValue] { try (1...max(count, 1)).prefix(count).map { try value($0) } }

    /// A registry reference to the value at `i` (keeps it alive).
    public func ref(_ i: Int) throws -> LuaRef {
        let type = mf_type(L, index(i))
        mf_pushvalue(L, index(i))
        var r: Int32 = 0
        let status = mf_ref(L, &r)
        if status != LUA_OK { throw state.popError(status, L) }
        return LuaRef(ref: r, type: type, state: state)
    }

    /// The Swift object of a registered class at `i`, if it is one of type `T`.
    public func object<T: AnyObject>(_ i: Int, as type: T.Type = T.self) -> T? {
        guard i >= 1 && i <= count, let box = mf_object_box(L, index(i)) else { return nil }
        return Unmanaged<AnyObject>.fromOpaque(box).takeUnretainedValue() as? T
    }

    // MARK: Checked accessors with Lua-style messages

    public func string(_ i: Int, function: String = "?") throws -> String {
        guard i <= count, mf_type(L, index(i)) == LUA_TSTRING, case .string(let s) = try value(i) else {
            throw bad(i, function, "string")
        }
        return s.description
    }

    public func integer(_ i: Int, function: String = "?") throws -> Int64 {
        // Read in place: a number needs no copy (the reader and its caches are for tables).
        if i >= 1 && i <= count, case let idx = index(i), mf_type(L, idx) == LUA_TNUMBER {
            if mf_isinteger(L, idx) != 0 { return lua_tointegerx(L, idx, nil) }
            if let n = Int64(exactly: lua_tonumberx(L, idx, nil)) { return n }
        }
        throw bad(i, function, "integer")
    }

    public func number(_ i: Int, function: String = "?") throws -> Double {
        guard let d = try value(i).doubleValue else { throw bad(i, function, "number") }
        return d
    }

    public func function(_ i: Int, function name: String = "?") throws -> LuaRef {
        guard isFunction(i) else { throw bad(i, name, "function") }
        return try ref(i)
    }

    public func bad(_ i: Int, _ function: String, _ expected: String) -> LuaArgumentError {
        LuaArgumentError(message: "bad argument #\(i) to '\(function)' (\(expected) expected, got \(typeName(i)))")
    }
}

/// A Lua-style argument error (`bad argument #1 to 'x' (string expected, got nil)`).
public struct LuaArgumentError: Error, CustomStringConvertible, Sendable {
    public let message: String
    public init(message: String) { self.message = message }
    public var description: String { message }
}

/// A Swift class whose instances Lua sees as userdata with methods.
///
///     let counter = try lua.makeClass("Counter", methods: ["inc": { args in ... }])
///     try lua.setGlobal("c", .object(Counter(), counter))
public final class LuaClass: @unchecked Sendable {
    public let name: String
    let ref: Int32
    weak var state: LuaState?

    init(name: String, ref: Int32, state: LuaState) {
        self.name = name
        self.ref = ref
        self.state = state
    }

    func metatableRef(in state: LuaState) throws -> Int32 {
        guard self.state === state else {
            throw LuaError.conversion(path: name, reason: "class registered in another Lua state")
        }
        return ref
    }
}

// MARK: - The C callbacks

extension LuaState {
    static let installCallbacksOnce: Void = {
        mf_set_swift_callbacks(swiftCall, swiftRelease)
    }()
}

private func swiftRelease(_ box: UnsafeMutableRawPointer?) {
    guard let box else { return }
    Unmanaged<AnyObject>.fromOpaque(box).release()
}

private func swiftCall(_ raw: UnsafeMutableRawPointer?, _ L: OpaquePointer?) -> Int32 {
    guard let raw, let L else { return 0 }
    let box = Unmanaged<FunctionBox>.fromOpaque(raw).takeUnretainedValue()
    guard let state = box.state else {
        return pushMessage("Swift function called after its Lua state closed", L)
    }
    return state.invoke(box.fn, L)
}

/// Pushes a message for the trampoline to raise with `file:line:` prefixed.
private func pushMessage(_ message: String, _ L: OpaquePointer) -> Int32 {
    var pushed: Int32 = 0
    var op = mf_op(code: Int32(MF_OP_STR.rawValue), a: 0, i: 0, d: 0, s: nil, len: 0)
    let status: Int32 = message.utf8CString.withUnsafeBufferPointer { buf in
        op.s = buf.baseAddress
        op.len = buf.count - 1
        return mf_push_ops(L, &op, 1, &pushed, nil)
    }
    // On a memory error the error object (a preallocated message) is already on the stack.
    switch status {
    case LUA_OK: return swiftRaiseWhere
    case MF_NOROOM: return Int32(MF_SWIFT_RAISE_NOROOM.rawValue)
    default: return swiftRaise
    }
}

/// `MF_SWIFT_RAISE`: the trampoline raises the error value on top of the stack.
private let swiftRaise = Int32(MF_SWIFT_RAISE.rawValue)
/// `MF_SWIFT_RAISE_WHERE`: the trampoline raises the message on top with the caller's `file:line: `.
private let swiftRaiseWhere = Int32(MF_SWIFT_RAISE_WHERE.rawValue)

extension LuaState {
    func invoke(_ fn: LuaFunction, _ L: OpaquePointer) -> Int32 {
        enter(); defer { leave() }
        let saved = currentThread
        currentThread = L
        defer { currentThread = saved }
        let top = mf_gettop(L)
        let slots = LuaSlots(state: self, L: L, base: 0, count: Int(top))
        do {
            let results = try fn(slots)
            try push(results, on: L)
            return Int32(results.count)
        } catch let raise as LuaRaise {
            do { try push([raise.value], on: L); return swiftRaise } catch {
                return pushMessage(String(describing: error), L)
            }
        } catch let error as LuaError {
            switch error {
            case .runtime(let message, _, _): return pushRaw(message, L)
            case .timeout, .memory:
                // Keep the stop going: re-raise the budget error itself.
                return pushRaw(error.message, L)
            default: return pushMessage(error.description, L)
            }
        } catch {
            return pushMessage(String(describing: error), L)
        }
    }

    private func pushRaw(_ message: String, _ L: OpaquePointer) -> Int32 {
        let r = pushMessage(message, L)
        return r == swiftRaiseWhere ? swiftRaise : r
    }
}
