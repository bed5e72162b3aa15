import Foundation

/// Runs `body` `runs` times and returns the median of the per-iteration nanoseconds.
///
///     let ns = medianNanos(runs: 5, iterations: 1_000_000) { n in for _ in 0..<n { work() } }
func medianNanos(runs: Int = 5, iterations: Int, _ body: (Int) -> Void) -> Double {
    var samples: [Double] = []
    for _ in 0..<runs {
        let start = DispatchTime.now().uptimeNanoseconds
        body(iterations)
        let end = DispatchTime.now().uptimeNanoseconds
        samples.append(Double(end - start) / Double(iterations))
    }
    samples.sort()
    return samples[samples.count / 2]
}

func format(_ value: Double, _ unit: String) -> String {
    String(format: "%10.1f %@", value, unit)
}
