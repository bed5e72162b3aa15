import LuaKit
import Runtime

/// A record made in Lua: an id (an integer or a string, kept as it came) and named fields.
/// The model of the repositories a plugin declares.
///
///     let ada = LuaRecord(id: 1, fields: ["name": "Ada"])   // Lua: { id = 1, name = "Ada" }
public struct LuaRecord: Identifiable, Sendable, Hashable, Queryable {
    public var id: RecordValue
    public var fields: [String: RecordValue]

    public init(id: RecordValue, fields: [String: RecordValue] = [:]) {
        self.id = id
        self.fields = fields
    }

    public func fieldValue(_ name: String) -> RecordValue? { name == "id" ? id : fields[name] }

    /// A Lua table `{ id = ..., field = value, ... }` as a record.
    public init(lua value: LuaValue) throws {
        guard case .object(var fields) = try RepositoryService.recordValue(value, path: "record") else {
            throw RepositoryServiceError(
                "a record is a table with an id and named fields, like { id = 1, name = \"Ada\" } (got \(value.typeName))"
            )
        }
        guard let id = fields.removeValue(forKey: "id"), id.isIdentity else {
            throw RepositoryServiceError(
                "a record needs an 'id' that is an integer or a string (got \(value["id"]?.typeName ?? "nil"))")
        }
        self.init(id: id, fields: fields)
    }

    /// The record as a Lua table, `id` included.
    public var lua: LuaValue {
        var t = LuaTable()
        for (k, v) in fields { t[k] = RepositoryService.luaValue(v) }
        t["id"] = RepositoryService.luaValue(id)
        return .table(t)
    }
}
