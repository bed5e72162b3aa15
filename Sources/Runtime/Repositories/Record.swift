/// A model whose fields a `Query` can read by name.
///
///     struct User: Codable, Identifiable, Queryable { var id: Int; var name: String }
///     // Encodable models get `fieldValue(_:)` for free (through `RecordValue(encoding:)`).
public protocol Queryable {
    /// The value of the field `name`, or nil when the model has no such field.
    ///
    /// - Parameter name: A field name (`"id"` is the identity).
    /// - Returns: The field's value.
    func fieldValue(_ name: String) -> RecordValue?
}

extension Queryable where Self: Encodable {
    public func fieldValue(_ name: String) -> RecordValue? {
        guard case .object(let fields)? = try? RecordValue(encoding: self) else { return nil }
        return fields[name]
    }
}

/// A dynamic record: an id and named fields. The model a SQLite table or a Lua table maps to.
///
///     var user = Record(id: "u1", fields: ["name": "Ada"])
///     user["age"] = 36
public struct Record: Sendable, Hashable, Codable, Identifiable, Queryable {
    /// The record's identity; also readable as the field `"id"`.
    public var id: String
    /// The record's fields, without `id`.
    public var fields: [String: RecordValue]

    /// Creates a record.
    ///
    /// - Parameters:
    ///   - id: The identity.
    ///   - fields: The fields (an `"id"` entry here is shadowed by `id`).
    public init(id: String, fields: [String: RecordValue] = [:]) {
        self.id = id
        self.fields = fields
    }

    /// Reads or writes one field.
    public subscript(field: String) -> RecordValue? {
        get { fields[field] }
        set { fields[field] = newValue }
    }

    public func fieldValue(_ name: String) -> RecordValue? {
        name == "id" ? .string(id) : fields[name]
    }
}
