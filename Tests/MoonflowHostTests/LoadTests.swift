import Foundation
import LuaKit
import MoonflowHost
import MoonflowHostTools
import MoonflowLua
import XCTest

/// The host under load, as an app puts it there: many threads sending at once
/// on the real clock while others read the state, and features made and
/// dropped by the thousand as screens come and go. Races and leaks that a
/// single test never meets show up here. Run under ThreadSanitizer by
/// scripts/test. The sizes can be lowered for a quick run with
/// MOONFLOW_LOAD_SCALE (a divisor, default 1).
final class LoadTests: XCTestCase {
    private var scale: Int { max(1, Int(ProcessInfo.processInfo.environment["MOONFLOW_LOAD_SCALE"] ?? "") ?? 1) }

    private var pluginsFolder: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("plugins").path
    }

    private func count(_ state: LuaValue) -> Int64? {
        guard case .table(let t) = state, case .integer(let n) = t["count"] else { return nil }
        return n
    }

    func testEightThreadsSendingWhileObserversReadLoseNoAction() throws {
        let host = try FeatureHost(configuration: .init(searchPaths: [pluginsFolder], clock: .real))
        let counter = try host.load("counter")
        counter.start()
        let senders = 8, perSender = 100_000 / scale
        let total = Int64(senders * perSender)
        let failures = Failures()
        let done = DispatchGroup()
        let reading = Flag()
        // Observers read the state the whole time: it only ever grows.
        for _ in 0..<2 {
            Thread.detachNewThread { [counter] in
                var last: Int64 = 0
                while !reading.isSet {
                    guard case .table(let t) = counter.state, case .integer(let n) = t["count"] else {
                        failures.add("the state lost its count")
                        return
                    }
                    if n < last { failures.add("the count went back from \(last) to \(n)") }
                    last = n
                }
            }
        }
        for _ in 0..<senders {
            done.enter()
            Thread.detachNewThread { [counter] in
                defer { done.leave() }
                for _ in 0..<perSender {
                    do { try counter.send(["type": "increment"]) } catch { failures.add("\(error)"); return }
                }
            }
        }
        done.wait()
        // Every action is queued now; wait (bounded) for the loop to reduce them all.
        let deadline = Date().addingTimeInterval(600)
        while count(counter.state) != total && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        reading.set()
        XCTAssertEqual(count(counter.state), total, "no action lost")
        XCTAssertEqual(failures.all, [])
    }

    func testTenThousandFeaturesMadeAndDroppedReturnMemoryToItsBaseline() throws {
        let host = try FeatureHost(configuration: .init(searchPaths: [pluginsFolder], clock: .virtual))
        func cycle(_ n: Int) throws {
            for _ in 0..<n {
                let counter = try host.load("counter")
                counter.start()
                try counter.send(["type": "increment", "by": 3])
                host.settle()
            }
            host.lua.collectGarbage()
        }
        try cycle(100)
        let baseline = host.lua.memoryInUse
        try cycle(10_000 / scale)
        let after = host.lua.memoryInUse
        XCTAssertLessThanOrEqual(
            Double(after), Double(baseline) * 1.10,
            "Lua memory after 10,000 features: \(after) bytes against a baseline of \(baseline)")
    }
}

private final class Failures: @unchecked Sendable {
    private let lock = NSLock()
    private var list: [String] = []
    func add(_ s: String) { lock.lock(); if list.count < 10 { list.append(s) }; lock.unlock() }
    var all: [String] { lock.lock(); defer { lock.unlock() }; return list }
}

private final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set() { lock.lock(); value = true; lock.unlock() }
    var isSet: Bool { lock.lock(); defer { lock.unlock() }; return value }
}
