import LuaKit
import Runtime

/// Record field values to Lua values and back, for every repository service.
extension RepositoryService {
    /// A Lua value as a record field value (tables become arrays or objects).
    static func recordValue(_ value: LuaValue, path: String) throws -> RecordValue {
        switch value {
        case .nil: return .null
        case .boolean(let b): return .bool(b)
        case .integer(let i): return .int(Int(i))
        case .number(let d): return .double(d)
        case .string(let s): return .string(s.description)
        case .table(let t):
            if t.hash.isEmpty && (!t.array.isEmpty || t.isJSONArray) {
                return .array(try t.array.enumerated().map { try recordValue($1, path: "\(path)[\($0 + 1)]") })
            }
            guard t.array.isEmpty else {
                throw RepositoryServiceError(
                    "\(path) mixes a list and named fields; a record field is a value, a list or a table of named fields"
                )
            }
            var object: [String: RecordValue] = [:]
            for (k, v) in t.hash {
                guard let key = k.stringValue else {
                    throw RepositoryServiceError("\(path) has a key \(k) that is not a string")
                }
                object[key] = try recordValue(v, path: "\(path).\(key)")
            }
            return .object(object)
        }
    }

    /// A record field value as a Lua value.
    package static func luaValue(_ value: RecordValue) -> LuaValue {
        switch value {
        case .null: return .nil
        case .bool(let b): return .boolean(b)
        case .int(let i): return .integer(Int64(i))
        case .double(let d): return .number(d)
        case .string(let s): return .string(LuaString(s))
        case .array(let a): return .table(LuaTable(array: a.map(luaValue), isJSONArray: true))
        case .object(let o):
            var t = LuaTable()
            for (k, v) in o { t[k] = luaValue(v) }
            return .table(t)
        }
    }
}
