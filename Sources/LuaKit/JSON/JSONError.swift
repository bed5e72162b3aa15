/// Malformed JSON text: where the problem is and what was expected there.
///
///     do { _ = try LuaValue(json: #"{"a": 1 "b": 2}"#) }
///     catch let error as JSONError { print(error) }
///     // line 1, column 9: expected ',' or '}' after an object member, found '"'
public struct JSONError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The 1-based line of the problem.
    public let line: Int
    /// The 1-based column of the problem, counted in Unicode scalars.
    public let column: Int
    /// The 0-based byte offset of the problem in the input.
    public let offset: Int
    /// What was expected and what was found instead.
    public let message: String

    /// Creates an error at a place in the input.
    ///
    ///     JSONError(line: 1, column: 9, offset: 8, message: "expected ',' or '}' after an object member")
    ///
    /// - Parameters:
    ///   - line: the 1-based line.
    ///   - column: the 1-based column in Unicode scalars.
    ///   - offset: the 0-based byte offset.
    ///   - message: what was expected and what was found.
    public init(line: Int, column: Int, offset: Int, message: String) {
        self.line = line
        self.column = column
        self.offset = offset
        self.message = message
    }

    /// `line L, column C: message`, ready for a user to read.
    public var description: String { "line \(line), column \(column): \(message)" }
}
