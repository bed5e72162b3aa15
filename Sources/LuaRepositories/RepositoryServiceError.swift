/// A repository call that cannot run as asked; the message names the service and the fix.
public struct RepositoryServiceError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
