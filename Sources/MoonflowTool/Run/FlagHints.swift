/// How to change a limit from the command line, added to the messages that the lower
/// layers write without naming flags (they serve embedding apps too, which set limits in
/// `FeatureHost.Configuration`): "time limit of 1000 ms exceeded" gains "(raise it with
/// --time-limit MS)".
///
///     FlagHints.add(to: "init.lua:3: time limit of 50 ms exceeded")
///     // "init.lua:3: time limit of 50 ms exceeded (raise it with --time-limit MS)"
package enum FlagHints {
    /// The sentence that names a limit, and the flag that changes it (most specific first).
    nonisolated(unsafe) private static let hints: [(sentence: Regex<AnyRegexOutput>, hint: String)] = [
        (try! Regex(#"test exceeded its time limit of \d+ ms"#), " (ten times --time-limit: raise it with moonflow test --time-limit MS)"),
        (try! Regex(#"time limit of \d+ ms exceeded(?:: the script ran too long)?"#), " (raise it with --time-limit MS)"),
        (try! Regex(#"went over its \d+ MB budget"#), " (raise it with --memory-limit MB)"),
        (try! Regex(#"writable, or store it elsewhere"#), " (moonflow run --db DIR)"),
    ]

    /// `message` with the flag that changes its limit right after the sentence that names
    /// it; unchanged when it names none or already says.
    package static func add(to message: String) -> String {
        guard !message.contains("raise it with"), !message.contains("--db DIR") else { return message }
        for (sentence, hint) in hints {
            guard let found = message.firstMatch(of: sentence) else { continue }
            return String(message[..<found.range.upperBound]) + hint + String(message[found.range.upperBound...])
        }
        return message
    }
}
