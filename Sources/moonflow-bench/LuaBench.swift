import Foundation
import LuaKit

// What crossing the LuaKit bridge costs, which every service call and every
// state a Swift observer reads pays: a call of a Swift function from Lua (a Lua
// loop, minus the same loop empty), and copying the 1,000-row table of
// bench/rows_data.lua into a `LuaValue`, against `cjson.encode` of the same
// table under lua5.4 (bench/rows.lua), the cost of the same walk in C.

/// Prints ns per Swift-function call from Lua and µs per 1,000-row conversion, beside cjson.
func luaBench() {
    guard let lua = attempt("LuaState", { try LuaState() }) else { return }
    let calls = BenchEnvironment.scaled(1_000_000)

    // A Lua loop of `calls` iterations around `body`; the loop itself is timed in Lua-free Swift.
    func loop(_ body: String) throws -> LuaRef {
        try lua.load(string: "local f, g, n = f, g, ... for i = 1, n do \(body) end", name: "bench.calls")
    }
    let perCall: [String: Double]? = attempt("Swift function calls") {
        try lua.setGlobal("f", .function { _ in [] })
        try lua.setGlobal("g", .function { args in [.value(try args.value(1))] })
        let empty = try loop("")
        let plain = try loop("f()")
        let echo = try loop("g(i)")
        let cFunction = try loop("rawequal(i, i)")
        var figures: [String: Double] = [:]
        for (name, chunk) in [("empty", empty), ("f()", plain), ("g(i)", echo), ("rawequal", cFunction)] {
            figures[name] = medianNanos(runs: 7, iterations: calls) { n in
                _ = try? lua.call(chunk, [.value(.integer(Int64(n)))])
            }
        }
        return figures
    }

    let rowsRef: LuaRef? = attempt("the 1,000-row table") {
        let make = try lua.load(file: BenchEnvironment.path("bench/rows_data.lua"))
        let generator = try lua.call(make, []) { try $0.ref(1) }
        return try lua.call(generator, [.value(.integer(1000))]) { try $0.ref(1) }
    }
    let conversions = BenchEnvironment.scaled(50)
    var converted: LuaValue = .nil
    let toSwift: Double? = rowsRef.flatMap { ref in
        attempt("conversion") {
            converted = try lua.value(of: ref)
            guard converted["rows"]?[999]?["email"] == .string("user1000@example.com") else {
                throw BenchError("the converted table is not the one rows_data.lua builds")
            }
            return medianNanos(runs: 11, iterations: conversions) { n in
                for _ in 0..<n { _ = try? lua.value(of: ref) }
            } / 1000
        }
    }
    let toLua: Double? =
        converted.isNil
        ? nil
        : attempt("push back") {
            medianNanos(runs: 11, iterations: conversions) { n in
                for _ in 0..<n { _ = try? lua.ref(.value(converted)) }
            } / 1000
        }
    let cjsonFigures = attempt("lua5.4 bench/rows.lua") {
        try runProgram(BenchEnvironment.lua, ["bench/rows.lua", "1000", "21"])
    }
    let cjson = cjsonFigures?["cjson_encode_us"]

    // JSON text into Lua: parsed into a `LuaValue` then pushed, or straight (`withJSON`),
    // alternated run by run; the 1,000-row table's text, and a small action.
    let rowsText = converted.isNil ? nil : try? converted.jsonBytes(sortedKeys: false)
    let actionText = Array(#"{"type":"add","title":"milk","qty":2,"done":false}"#.utf8)
    let actions = BenchEnvironment.scaled(200_000)
    var intoLua: [String: [Double]] = [:]
    if let rowsText {
        for _ in 0..<5 {
            for (name, text, n, unit) in [
                ("rows", rowsText, conversions, 1000.0), ("action", actionText, actions, 1.0),
            ] {
                let viaValue =
                    medianNanos(runs: 3, iterations: n) { n in
                        for _ in 0..<n { _ = try? lua.ref(.value(try LuaValue(jsonBytes: text))) }
                    } / unit
                let straight =
                    medianNanos(runs: 3, iterations: n) { n in
                        text.withUnsafeBytes { buffer in
                            for _ in 0..<n { _ = try? lua.withJSON(buffer) { try $0.ref(1) } }
                        }
                    } / unit
                intoLua["\(name) via", default: []].append(viaValue)
                intoLua["\(name) straight", default: []].append(straight)
            }
        }
    }
    func median(_ key: String) -> Double? { intoLua[key].map { $0.sorted()[$0.count / 2] } }

    let swiftCall = perCall.flatMap { f in f["f()"].flatMap { call in f["empty"].map { call - $0 } } }
    print("Swift function called from Lua, \(calls) calls (median of 7 runs, the empty loop subtracted)")
    if let perCall, let empty = perCall["empty"] {
        print(row("f() -> nothing", swiftCall, "ns/call"))
        print(row("g(i) -> i (one argument, one result)", perCall["g(i)"].map { $0 - empty }, "ns/call"))
        print(row("C function for scale: rawequal(i, i)", perCall["rawequal"].map { $0 - empty }, "ns/call"))
        print(row("the empty loop itself", empty, "ns/iteration"))
    }
    print("1,000-row table {id, name, email, active, score} (median of 11 runs of \(conversions); lua5.4: 21 of 20)")
    print(row("Lua -> LuaValue (lua.value(of: ref))", toSwift, "µs"))
    print(row("LuaValue -> Lua (lua.ref(.value(v)))", toLua, "µs"))
    print(row("cjson.encode under lua5.4", cjson, "µs"))
    print(ratioRow("ratio Lua -> LuaValue / cjson.encode", toSwift, cjson))
    print("JSON text into Lua (medians of 5 alternated rounds)")
    print(row("1,000 rows: LuaValue(jsonBytes:), then pushed", median("rows via"), "µs"))
    print(row("1,000 rows: straight (lua.withJSON)", median("rows straight"), "µs"))
    print(row("1,000 rows: cjson.decode under lua5.4", cjsonFigures?["cjson_decode_us"], "µs"))
    print(ratioRow("ratio straight / through a LuaValue", median("rows straight"), median("rows via")))
    print(row("an action: LuaValue(jsonBytes:), then pushed", median("action via"), "ns"))
    print(row("an action: straight (lua.withJSON)", median("action straight"), "ns"))
    print(ratioRow("ratio straight / through a LuaValue", median("action straight"), median("action via")))
}
