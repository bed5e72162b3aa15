import Foundation
import Runtime

/// How a model maps to a row of a `SQLiteRepository`: an id (an integer or a string) and named
/// fields, each a `RecordValue`.
///
///     let coding = SQLiteRowCoding<Record>.records          // Record's id and fields as they are
///     let users = SQLiteRowCoding<User>.codable             // any Codable model, through JSON
///
/// Make your own for a model that is neither, as the Lua host does for its records.
public struct SQLiteRowCoding<Model: Identifiable>: Sendable {
    /// A model identity as the stored id.
    public let id: @Sendable (Model.ID) throws -> RecordValue
    /// A model as its stored id and fields (without `id`).
    public let encode: @Sendable (Model) throws -> (id: RecordValue, fields: [String: RecordValue])
    /// A stored id and fields as a model.
    public let decode: @Sendable (_ id: RecordValue, _ fields: [String: RecordValue]) throws -> Model

    /// - Parameters:
    ///   - id: A model identity as the stored id (an integer or a string).
    ///   - encode: A model as its id and fields.
    ///   - decode: An id and fields as a model (throws when they do not make one).
    public init(
        id: @escaping @Sendable (Model.ID) throws -> RecordValue,
        encode: @escaping @Sendable (Model) throws -> (id: RecordValue, fields: [String: RecordValue]),
        decode: @escaping @Sendable (_ id: RecordValue, _ fields: [String: RecordValue]) throws -> Model
    ) {
        self.id = id
        self.encode = encode
        self.decode = decode
    }
}

extension SQLiteRowCoding where Model == Runtime.Record {
    /// `Record`s: the id as a string, the fields as they are.
    public static var records: Self {
        Self(
            id: { .string($0) },
            encode: { (.string($0.id), $0.fields) },
            decode: { id, fields in
                guard case .string(let text) = id else {
                    throw StoredRowError("the stored id \(id) is not a string, as a Record's id is")
                }
                return Runtime.Record(id: text, fields: fields)
            })
    }
}

extension SQLiteRowCoding where Model: Codable & Sendable, Model.ID: Codable & Sendable {
    /// A `Codable` model: encoded to a JSON object whose `id` is the stored id and whose other
    /// keys are the fields, and decoded back the same way.
    ///
    ///     struct User: Codable, Identifiable, Sendable { var id: Int; var name: String; var team: String }
    ///     // stored as id 1, fields { name = "Ada", team = "core" }; queries read `name` and `team`
    public static var codable: Self {
        Self(
            id: { try StoredJSON.value(from: String(decoding: try JSONEncoder().encode($0), as: UTF8.self)) },
            encode: { model in
                let json = String(decoding: try JSONEncoder().encode(model), as: UTF8.self)
                guard case .object(var fields) = try StoredJSON.value(from: json) else {
                    throw StoredRowError(
                        "\(Model.self) does not encode as a keyed object, so it has no fields to store")
                }
                fields.removeValue(forKey: "id")
                let id = try StoredJSON.value(from: String(decoding: try JSONEncoder().encode(model.id), as: UTF8.self))
                return (id, fields)
            },
            decode: { id, fields in
                var object = fields
                object["id"] = id
                return try JSONDecoder().decode(Model.self, from: Data(try StoredJSON.text(of: .object(object)).utf8))
            })
    }
}

/// A model that does not map to a row, or a row that does not map back to a model.
struct StoredRowError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
