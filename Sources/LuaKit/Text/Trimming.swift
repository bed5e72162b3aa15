// White space trimmed with the standard library alone. Foundation's
// `trimmingCharacters(in:)` goes through `NSString` and `CharacterSet`, which costs
// a start of `moonflow run` about 0.9 million instructions on its first line of
// input (docs/contributing.md, "Where start-up goes"); these are concrete, not
// generic, so no caller pays for an unspecialized path either.

extension Substring {
    /// The text without the white space (spaces, tabs, line ends: `Character.isWhitespace`)
    /// at either end.
    ///
    ///     Substring("  {\"type\":\"inc\"}\r\n").trimmingWhitespace()   // {"type":"inc"}
    package func trimmingWhitespace() -> String {
        guard let first = firstIndex(where: { !$0.isWhitespace }),
            let last = lastIndex(where: { !$0.isWhitespace })
        else { return "" }
        return String(self[first...last])
    }
}

extension String {
    /// The text without the white space at either end (`Substring.trimmingWhitespace()`).
    package func trimmingWhitespace() -> String {
        self[...].trimmingWhitespace()
    }
}
