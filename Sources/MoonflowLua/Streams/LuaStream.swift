import LuaKit
import Streams

/// A stream as Lua sees it: a userdata holding a cold Swift `Producer`.
/// Every operator is the Swift one from `Streams`; nothing is re-implemented in Lua.
final class LuaStream {
    let producer: Producer<LuaValue>
    init(_ producer: Producer<LuaValue>) { self.producer = producer }
}

/// A stream is a userdata of the Lua state its bridge owns, so what its operators call
/// later holds the bridge weakly: held strongly, state and bridge would keep each other
/// alive after everyone else let go of them. Once the bridge is gone the call fails.
extension Optional where Wrapped == LuaBridge {
    func alive() throws -> LuaBridge {
        guard let self else {
            throw LuaStreamError(message: "the Lua state of this stream is gone (its host was released)")
        }
        return self
    }
}

/// The `mf.*` stream constructors.
enum LuaStreamConstructors {
    static func table(_ bridge: LuaBridge) -> [(String, LuaFunction)] {
        [
            ("just", { [unowned bridge] args in [bridge.push(.just(try args.value(1)))] }),
            ("empty", { [unowned bridge] _ in [bridge.push(.empty())] }),
            ("never", { [unowned bridge] _ in [bridge.push(.never())] }),
            (
                "fail",
                { [unowned bridge] args in
                    [bridge.push(.fail(LuaStreamError(try args.value(1), location: args.callerLocation)))]
                }
            ),
            (
                "from",
                { [unowned bridge] args in
                    guard let t = try args.value(1).tableValue else { throw args.bad(1, "from", "table") }
                    return [bridge.push(.from(t.array))]
                }
            ),
            ("concat", { [unowned bridge] args in [bridge.push(.concat(try streams(bridge, args, "concat")))] }),
            ("merge", { [unowned bridge] args in [bridge.push(.merge(try streams(bridge, args, "merge")))] }),
            (
                "combineLatest",
                { [unowned bridge] args in
                    let combined = Producer.combineLatest(try streams(bridge, args, "combineLatest"))
                    return [bridge.push(combined.map { .table(LuaTable(array: $0, isJSONArray: true)) })]
                }
            ),
            (
                "timer",
                { [unowned bridge] args in
                    let ms = try args.integer(1, function: "timer")
                    let value = args.count >= 2 ? try args.value(2) : .integer(0)
                    return [bridge.push(.timer(Int(ms), value, on: bridge.scheduler))]
                }
            ),
            (
                "interval",
                { [unowned bridge] args in
                    let ms = try args.integer(1, function: "interval")
                    guard ms > 0 else {
                        throw LuaArgumentError(message: "bad argument #1 to 'interval' (period must be positive)")
                    }
                    return [
                        bridge.push(Producer<Int>.interval(Int(ms), on: bridge.scheduler).map { .integer(Int64($0)) })
                    ]
                }
            ),
            (
                "task",
                { [unowned bridge] args in
                    [
                        bridge.push(
                            LuaTaskRunner.producer(
                                bridge, try args.function(1, function: "task"), location: args.definitionLocation(1)))
                    ]
                }
            ),
        ]
    }

    private static func streams(_ bridge: LuaBridge, _ args: LuaSlots, _ name: String) throws -> [Producer<LuaValue>] {
        try (0..<args.count).map { try bridge.stream(args, $0 + 1, name) }
    }
}

/// The stream methods (`s:map(f)`, ...).
enum LuaStreamMethods {
    static func table(_ bridge: LuaBridge) -> [String: LuaFunction] {
        func method(
            _ name: String, _ body: @escaping (LuaBridge, Producer<LuaValue>, LuaSlots) throws -> Producer<LuaValue>
        ) -> (String, LuaFunction) {
            (name, { [unowned bridge] args in [bridge.push(try body(bridge, try bridge.stream(args, 1, name), args))] })
        }
        let methods: [(String, LuaFunction)] = [
            method("map") { b, s, args in
                let fn = try args.function(2, function: "map")
                return s.map { [weak b] in try b.alive().call1(fn, [$0]) }
            },
            method("filter") { b, s, args in
                let fn = try args.function(2, function: "filter")
                return s.filter { [weak b] in try b.alive().call1(fn, [$0]).isTruthy }
            },
            method("flatMap") { b, s, args in
                let fn = try args.function(2, function: "flatMap")
                let at = args.definitionLocation(2)
                let strategy = try LuaStreamMethods.strategy(args, 3, "flatMap")
                return s.flatMap(strategy) { [weak b] in
                    try b.alive().callStream(fn, [.value($0)], what: "the flatMap function", location: at)
                }
            },
            method("flatMapLatest") { b, s, args in
                let fn = try args.function(2, function: "flatMapLatest")
                let at = args.definitionLocation(2)
                return s.flatMap(.latest) { [weak b] in
                    try b.alive().callStream(fn, [.value($0)], what: "the flatMapLatest function", location: at)
                }
            },
            method("concatMap") { b, s, args in
                let fn = try args.function(2, function: "concatMap")
                let at = args.definitionLocation(2)
                return s.flatMap(.concat) { [weak b] in
                    try b.alive().callStream(fn, [.value($0)], what: "the concatMap function", location: at)
                }
            },
            method("startWith") { _, s, args in
                s.startWith(contentsOf: try (2...max(args.count, 2)).prefix(args.count - 1).map { try args.value($0) })
            },
            method("catchError") { b, s, args in
                let fn = try args.function(2, function: "catchError")
                let at = args.definitionLocation(2)
                return s.catchError { [weak b] error in
                    try b.alive().callStream(
                        fn, [.value(LuaStreamError(error).value)], what: "the catchError function", location: at)
                }
            },
            method("scan") { b, s, args in
                let seed = try args.value(2)
                let fn = try args.function(3, function: "scan")
                return s.scan(seed) { [weak b] acc, v in try b.alive().call1(fn, [acc, v]) }
            },
            method("withLatestFrom") { b, s, args in
                let other = try b.stream(args, 2, "withLatestFrom")
                guard args.isFunction(3) else { return s.withLatestFrom(other) }
                let fn = try args.ref(3)
                return s.withLatestFrom(other) { [weak b] x, y in try b.alive().call1(fn, [x, y]) }
            },
            method("distinctUntilChanged") { _, s, _ in s.distinctUntilChanged() },
            method("take") { _, s, args in s.take(Int(try args.integer(2, function: "take"))) },
            method("takeUntil") { b, s, args in s.takeUntil(try b.stream(args, 2, "takeUntil")) },
            method("delay") { b, s, args in s.delay(Int(try args.integer(2, function: "delay")), on: b.scheduler) },
            method("debounce") { b, s, args in
                s.debounce(Int(try args.integer(2, function: "debounce")), on: b.scheduler)
            },
            method("throttle") { b, s, args in
                s.throttle(Int(try args.integer(2, function: "throttle")), latest: true, on: b.scheduler)
            },
            method("timeout") { b, s, args in
                let ms = try args.integer(2, function: "timeout")
                guard ms >= 0 else {
                    throw LuaArgumentError(message: "bad argument #2 to 'timeout' (ms must not be negative, got \(ms))")
                }
                guard !args.isNil(3) else { return s.timeout(Int(ms), on: b.scheduler) }
                return s.timeout(Int(ms), other: try b.stream(args, 3, "timeout"), on: b.scheduler)
            },
            method("retry") { b, s, args in try LuaStreamMethods.retry(b, s, args) },
        ]
        var table = Dictionary(uniqueKeysWithValues: methods)
        table["subscribe"] = { [unowned bridge] args in
            let s = try bridge.stream(args, 1, "subscribe")
            let onValue = args.isFunction(2) ? try args.ref(2) : nil
            let onError = args.isFunction(3) ? try args.ref(3) : nil
            let onCompleted = args.isFunction(4) ? try args.ref(4) : nil
            // Weak: the subscription may outlive the bridge (a timer on the host's queue).
            let disposable = s.start(
                Observer { [weak bridge] event in
                    guard let bridge else { return }
                    // Errors inside observers are reported, never thrown into the stream.
                    switch event {
                    case .value(let v): if let f = onValue { _ = try? bridge.lua.call(f, [.value(v)]) }
                    case .failed(let e):
                        if let f = onError { _ = try? bridge.lua.call(f, [.value(LuaStreamError(e).value)]) }
                    case .completed: if let f = onCompleted { _ = try? bridge.lua.call(f) }
                    case .interrupted: break
                    }
                })
            return [
                .function { _ in
                    disposable.dispose(); return []
                }
            ]
        }
        return table
    }

    /// `s:retry(n [, { backoff = ms | function(retry) -> ms }])`: a constant backoff is checked
    /// here, a function's result on each retry (a bad one fails the stream, naming the function).
    static func retry(_ bridge: LuaBridge, _ s: Producer<LuaValue>, _ args: LuaSlots) throws -> Producer<LuaValue> {
        let n = try args.integer(2, function: "retry")
        guard n >= 0 else {
            throw LuaArgumentError(
                message: "bad argument #2 to 'retry' (count of retries must not be negative, got \(n))")
        }
        guard !args.isNil(3) else { return s.retry(Int(n)) }
        guard args.isTable(3) else { throw args.bad(3, "retry", "table") }
        try args.forEachField(3) { key, _ in
            guard key == "backoff" else {
                throw LuaArgumentError(
                    message: "bad argument #3 to 'retry' (unknown option '\(key)'; the only one is backoff)")
            }
        }
        return try args.field(3, "backoff") { field in
            if field.isNil(1) { return s.retry(Int(n)) }
            if field.isFunction(1) {
                let fn = try field.ref(1)
                let at = field.definitionLocation(1)
                return s.retry(
                    Int(n),
                    backoff: { [weak bridge] retry in
                        let result = try bridge.alive().call1(fn, [.integer(Int64(retry))])
                        guard let ms = Self.milliseconds(result) else {
                            let place = at.map { " (\($0))" } ?? ""
                            throw LuaStreamError(
                                message:
                                    "the retry backoff function\(place) must return a non-negative integer (ms), got \(Self.described(result))",
                                location: at)
                        }
                        return ms
                    }, on: bridge.scheduler)
            }
            func bad(_ got: String) -> LuaArgumentError {
                LuaArgumentError(
                    message:
                        "bad argument #3 to 'retry' (field 'backoff' must be a non-negative integer or a function, got \(got))"
                )
            }
            guard field.typeName(1) == "number" else { throw bad(field.typeName(1)) }
            let value = try field.value(1)
            guard let ms = Self.milliseconds(value) else { throw bad(Self.described(value)) }
            return s.retry(Int(n), backoff: { _ in ms }, on: bridge.scheduler)
        }
    }

    /// A whole, non-negative number of milliseconds, or nil.
    private static func milliseconds(_ v: LuaValue) -> Int? {
        switch v {
        case .integer(let i) where i >= 0: return Int(exactly: i)
        case .number(let d) where d >= 0: return Int64(exactly: d).flatMap { Int(exactly: $0) }
        default: return nil
        }
    }

    /// A number as itself, anything else by its type: for messages.
    private static func described(_ v: LuaValue) -> String {
        switch v {
        case .integer(let i): return "\(i)"
        case .number(let d): return "\(d)"
        case .nil: return "nil"
        default: return v.typeName
        }
    }

    static func strategy(_ args: LuaSlots, _ i: Int, _ function: String) throws -> FlattenStrategy {
        guard !args.isNil(i) else { return .merge }
        let name = try args.string(i, function: function)
        guard let s = FlattenStrategy(name: name) else {
            throw LuaArgumentError(
                message:
                    "bad argument #\(i) to '\(function)' (unknown strategy '\(name)'; use merge, latest, concat or exhaust)"
            )
        }
        return s
    }
}
