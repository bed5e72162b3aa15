/// How to change a limit from the command line, added to the messages that the lower
/// layers write without naming flags (they serve embedding apps too, which set limits in
/// `FeatureHost.Configuration` and `InspectorHub.Limits`): "time limit of 1000 ms exceeded"
/// gains "(raise it with --time-limit MS)".
///
///     FlagHints.add(to: "init.lua:3: time limit of 50 ms exceeded")
///     // "init.lua:3: time limit of 50 ms exceeded (raise it with --time-limit MS)"
package enum FlagHints {
    /// The sentence that names a limit (text, a number, text, then optional words that
    /// belong to it) and the flag that changes it; the most specific first.
    private static let hints: [(before: String, after: String, more: String?, hint: String)] = [
        (
            "test exceeded its time limit of ", " ms", nil,
            " (ten times --time-limit: raise it with moonflow test --time-limit MS)"
        ),
        ("time limit of ", " ms exceeded", ": the script ran too long", " (raise it with --time-limit MS)"),
        ("went over its ", " MB budget", nil, " (raise it with --memory-limit MB)"),
        ("writable, or store it elsewhere", "", nil, " (moonflow run --db DIR)"),
        // The inspector's refusals (InspectorHub's advice under moonflow run --inspect).
        ("larger limits (frames, bytes) keep more", "", nil, " (--inspect-frames N, --inspect-memory MB)"),
        (
            "more than the inspector keeps to send again (a quarter of its bytes limit, ", " bytes)", nil,
            "; run with a larger --inspect-memory, or record the run (--record) and use moonflow replay"
        ),
    ]

    /// `message` with the flag that changes its limit right after the sentence that names
    /// it; unchanged when it names none or already says.
    package static func add(to message: String) -> String {
        guard !message.contains("raise it with"), !message.contains("--db DIR"), !message.contains("--inspect-") else {
            return message
        }
        for (before, after, more, hint) in hints {
            guard let end = sentenceEnd(in: message, before: before, after: after, more: more) else { continue }
            return String(message[..<end]) + hint + String(message[end...])
        }
        return message
    }

    /// Where `before` + digits + `after` (+ `more`, if it follows) ends in `message`; an
    /// empty `after` means no number.
    private static func sentenceEnd(in message: String, before: String, after: String, more: String?) -> String.Index? {
        var searchFrom = message.startIndex
        while let start = message.range(of: before, range: searchFrom..<message.endIndex) {
            searchFrom = start.upperBound
            var end = start.upperBound
            if !after.isEmpty {
                let digits = message[end...].prefix(while: \.isASCIIDigit)
                guard !digits.isEmpty, message[digits.endIndex...].hasPrefix(after) else { continue }
                end = message.index(digits.endIndex, offsetBy: after.count)
            }
            if let more, message[end...].hasPrefix(more) { end = message.index(end, offsetBy: more.count) }
            return end
        }
        return nil
    }
}

private extension Character {
    var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
