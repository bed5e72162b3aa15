/// The name a typo meant: what every did-you-mean in Moonflow asks (a definition's
/// fields, a schema's types, a state's fields, a decoded table's keys).
package enum Nearest {
    /// The name in `known` nearest to `name` by edit distance (ignoring case), when it is
    /// near enough to be a typo of it and not a rewrite of the whole name.
    package static func name(to name: String, in known: [String]) -> String? {
        let scored = known.map { ($0, editDistance(name.lowercased(), $0.lowercased())) }
        guard let best = scored.min(by: { $0.1 < $1.1 }) else { return nil }
        return best.1 <= max(2, name.count / 3) && best.1 < name.count ? best.0 : nil
    }

    /// Levenshtein distance between two strings, by characters.
    package static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var row = Array(0...b.count)
        for i in 1...a.count {
            var previous = row[0]
            row[0] = i
            for j in 1...b.count {
                let current = row[j]
                row[j] = min(row[j] + 1, row[j - 1] + 1, previous + (a[i - 1] == b[j - 1] ? 0 : 1))
                previous = current
            }
        }
        return row[b.count]
    }
}
