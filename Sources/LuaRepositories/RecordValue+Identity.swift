import Runtime

extension RecordValue {
    /// Whether this value can be a record's identity (an integer or a string).
    package var isIdentity: Bool {
        switch self {
        case .int, .string: true
        default: false
        }
    }
}
