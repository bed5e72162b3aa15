import Foundation
import LuaKit
import MoonflowHost

// The embedding issue's line: from `send` on the main actor to a decoded view
// model (FeatureViewModel) showing the new state there, through a host on the
// real clock (its own serial queue), for plugins/counter.

func viewModelBench() {
    let sends = BenchEnvironment.scaled(2_000)
    let box = ResultBox()
    Task { @MainActor in
        box.result = await measureViewModel(sends: sends)
    }
    while box.result == nil { RunLoop.main.run(until: Date().addingTimeInterval(0.005)) }
    guard case .success(let micros)? = box.result else {
        if case .failure(let error)? = box.result { print("  view model: \(error)") }
        return
    }
    let sorted = micros.sorted()
    print("send on the main actor to a decoded view model updated there (real clock), \(sends) sends")
    print(row("median", sorted[sorted.count / 2], "µs"))
    print(row("p99", sorted[min(sorted.count - 1, Int(Double(sorted.count) * 0.99))], "µs"))
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
private func measureViewModel(sends: Int) async -> Result<[Double], any Error> {
    do {
        let host = try FeatureHost(configuration: .init(searchPaths: [BenchEnvironment.path("plugins")], clock: .real))
        let counter = try await host.load("counter")
        counter.start()
        let model = try FeatureViewModel(counter, as: CounterView.self)
        var micros: [Double] = []
        for _ in 0..<sends {
            let before = model.view.count
            let start = DispatchTime.now().uptimeNanoseconds
            try model.send(["type": "increment"])
            while model.view.count == before { await Task.yield() }
            micros.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1000)
        }
        model.stop()
        return .success(micros)
    } catch {
        return .failure(error)
    }
}
