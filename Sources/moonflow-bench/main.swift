// moonflow-bench: prints figures; never a timed test. `scripts/bench` builds it in release.
// Usage: moonflow-bench [SUITE ...]   (no argument: every suite)
import Foundation

let suites: [(name: String, run: () -> Void)] = benchSuites()
let wanted = Set(CommandLine.arguments.dropFirst())
for suite in suites where wanted.isEmpty || wanted.contains(suite.name) {
    print("== \(suite.name)")
    suite.run()
}
