import Foundation
import LuaKit
import MoonflowHost
import MoonflowHostTools
import MoonflowLua

// Scale: 10,000 counter features live in one host (virtual clock), as an app with
// many screens or list rows would hold them. Prints the resident memory each one
// adds and ns per action sent to features picked in turn, so that a feature's
// fixed cost stays visible. Target: under 100 KB per feature.

func scaleBench() {
    let count = BenchEnvironment.scaled(10_000)
    let result: (kb: Double, ns: Double, luaKB: Double)? = attempt("scale") {
        let host = try FeatureHost(
            configuration: .init(searchPaths: [BenchEnvironment.path("plugins")], clock: .virtual))
        var features: [RunningFeature] = []
        features.reserveCapacity(count)
        _ = try host.load("counter")  // the first load warms the caches
        let before = residentKB()
        let luaBefore = host.lua.memoryInUse
        for _ in 0..<count {
            let f = try host.load("counter")
            f.start()
            features.append(f)
        }
        host.settle()
        let after = residentKB()
        let luaAfter = host.lua.memoryInUse
        let rounds = 10
        let start = DispatchTime.now().uptimeNanoseconds
        for round in 0..<rounds {
            for (i, f) in features.enumerated() where (i + round) % 10 == 0 { try f.send(["type": "increment"]) }
            host.settle()
        }
        let sent = rounds * ((count + 9) / 10)
        let ns = Double(DispatchTime.now().uptimeNanoseconds - start) / Double(sent)
        return ((after - before) / Double(count), ns, Double(luaAfter - luaBefore) / 1024 / Double(count))
    }
    guard let result else { return }
    print("\(count) counter features live in one host (virtual clock)")
    print(row("resident memory per feature", result.kb, "KB", note: "target < 100"))
    print(row("    of which in the Lua heap", result.luaKB, "KB"))
    print(row("send + settle, one action to each of 1,000", result.ns, "ns/action"))
}

/// The process's resident set size in KB (Linux: /proc/self/statm).
private func residentKB() -> Double {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Double(fields[1]) else { return 0 }
    return pages * Double(sysconf(Int32(_SC_PAGESIZE))) / 1024
}
