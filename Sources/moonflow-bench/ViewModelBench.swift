import Foundation
import LuaKit
import MoonflowHost
import MoonflowLua

// From `send` on the main actor to a decoded view model (FeatureViewModel) showing the new
// state there, for plugins/counter on the real clock: a host on its own serial queue (the
// state reaches the main actor on a later turn) beside a host on the main actor (`send` has
// reduced when it returns). Measured in alternating rounds, so both see the same machine.

func viewModelBench() {
    let sends = BenchEnvironment.scaled(2_000)
    var micros: [FeatureHost.StateExecutor: [Double]] = [:]
    for _ in 0..<2 {
        for executor in [FeatureHost.StateExecutor.queue, .mainActor] {
            let box = ResultBox()
            Task { @MainActor in
                box.result = await measureViewModel(sends: sends / 2, executor: executor)
            }
            while box.result == nil { RunLoop.main.run(until: Date().addingTimeInterval(0.005)) }
            switch box.result {
            case .success(let round)?: micros[executor, default: []] += round
            case .failure(let error)?: return print("  view model (\(executor)): \(error)")
            case nil: return
            }
        }
    }
    print("send on the main actor to a decoded view model updated there (real clock), \(sends) sends per executor")
    for executor in [FeatureHost.StateExecutor.queue, .mainActor] {
        let sorted = (micros[executor] ?? [0]).sorted()
        print(row("executor .\(executor.rawValue): median", sorted[sorted.count / 2], "µs"))
        print(row("executor .\(executor.rawValue): p99", sorted[min(sorted.count - 1, Int(Double(sorted.count) * 0.99))], "µs"))
    }
}

private final class ResultBox: @unchecked Sendable {
    private let lock = NSLock()
    private var _result: Result<[Double], any Error>?
    var result: Result<[Double], any Error>? {
        get { lock.withLock { _result } }
        set { lock.withLock { _result = newValue } }
    }
}

private struct CounterView: Decodable, Sendable { let count: Int }

@MainActor
private func measureViewModel(sends: Int, executor: FeatureHost.StateExecutor) async -> Result<[Double], any Error> {
    do {
        let host = try FeatureHost(configuration: .init(searchPaths: [BenchEnvironment.path("plugins")], clock: .real, executor: executor))
        let counter = try await host.load("counter")
        counter.start()
        let model = try FeatureViewModel(counter, as: CounterView.self)
        var micros: [Double] = []
        for _ in 0..<sends {
            let before = model.view.count
            let start = DispatchTime.now().uptimeNanoseconds
            model.send(["type": "increment"])
            while model.view.count == before { await Task.yield() }
            micros.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1000)
        }
        model.stop()
        return .success(micros)
    } catch {
        return .failure(error)
    }
}
