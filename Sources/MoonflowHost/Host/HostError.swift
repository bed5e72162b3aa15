/// A host-level problem (a missing plugin, a file that returns no definition).
public struct HostError: Error, Sendable, CustomStringConvertible {
    public let message: String
    package init(_ message: String) { self.message = message }
    public var description: String { message }
}
