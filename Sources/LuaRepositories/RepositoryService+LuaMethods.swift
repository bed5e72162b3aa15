import LuaKit
import MoonflowLua
import Runtime

/// The methods Lua calls on a repository service, and the parsing of their arguments.
extension RepositoryService {
    /// `get`, `getAll`, `put`, `putAll`, `delete`, `deleteAll`, each `(self, argument [, query])`.
    package static func methods(_ bridge: LuaBridge) -> [String: LuaFunction] {
        func method(
            _ method: String, _ parse: @escaping (RepositoryService, LuaSlots) throws -> Call
        ) -> (String, LuaFunction) {
            (
                method,
                { [unowned bridge] args in
                    guard let service = args.object(1, as: RepositoryService.self) else {
                        throw LuaArgumentError(
                            message:
                                "bad argument #1 to '\(method)' (repository expected, got \(args.typeName(1))); call it with a colon: env.services.NAME:\(method){...}"
                        )
                    }
                    let call = try parse(service, args)
                    return [bridge.push(bridge.reenter(service.stream(call), service: "\(service.name):\(method)"))]
                }
            )
        }
        return Dictionary(uniqueKeysWithValues: [
            method("get") { s, a in .get(try s.target(a, "get", allowAll: false)) },
            method("getAll") { s, a in .getAll(try s.target(a, "getAll", allowAll: true)) },
            method("put") { s, a in
                guard a.isTable(2) else { throw a.bad(2, "put", "record table") }
                return .put(try a.value(2, path: "record"), replacing: try s.replacing(a, "put"))
            },
            method("putAll") { s, a in
                guard case .table(let t) = try a.value(2, path: "records"), t.hash.isEmpty else {
                    throw a.bad(2, "putAll", "list of records")
                }
                return .putAll(t.array, replacing: try s.replacing(a, "putAll"))
            },
            method("delete") { s, a in .delete(try s.target(a, "delete", allowAll: false)) },
            method("deleteAll") { s, a in .deleteAll(try s.target(a, "deleteAll", allowAll: true)) },
        ])
    }

    /// Argument 2: `{ id = v }`, `{ ids = {...} }` (when listing), a query table, or nil (every record when `allowAll`).
    private func target(_ args: LuaSlots, _ method: String, allowAll: Bool) throws -> Target {
        let value = try args.value(2, path: "argument")
        if value.isNil, allowAll { return .query(.all) }
        guard case .table(let t) = value else {
            throw LuaArgumentError(
                message:
                    "\(name):\(method) takes { id = ... }\(allowAll ? ", { ids = {...} }" : "") or a query { where = {...}, orderBy = ..., limit = ... } (got \(value.typeName))"
            )
        }
        if let id = value["id"] {
            guard t.count == 1 else {
                throw LuaArgumentError(
                    message:
                        "\(name):\(method){ id = ... } takes nothing else; use a query with where = { id = ... } to combine"
                )
            }
            return .id(try RepositoryService.recordValue(id, path: "id"))
        }
        if let ids = value["ids"] {
            guard allowAll, t.count == 1, case .table(let list) = ids, list.hash.isEmpty else {
                throw LuaArgumentError(
                    message:
                        "\(name):\(method): 'ids' must be the only field, a list of ids\(allowAll ? "" : "; only getAll and deleteAll take ids")"
                )
            }
            return .ids(
                try list.array.enumerated().map { try RepositoryService.recordValue($1, path: "ids[\($0 + 1)]") })
        }
        return .query(try query(value, method))
    }

    /// Argument 3 of put/putAll: the query whose matches the new records replace.
    private func replacing(_ args: LuaSlots, _ method: String) throws -> Query? {
        let value = try args.value(3, path: "query")
        return value.isNil ? nil : try query(value, method)
    }

    /// `{ where = { field = value }, orderBy = "f" | {"f", "g"}, descending = bool, limit = n, offset = n }`.
    func query(_ value: LuaValue, _ method: String) throws -> Query {
        guard case .table(let t) = value, t.array.isEmpty else {
            throw LuaArgumentError(
                message:
                    "\(name):\(method): a query is a table { where = {...}, orderBy = ..., descending = ..., limit = ..., offset = ... }"
            )
        }
        func fail(_ why: String) -> LuaArgumentError { LuaArgumentError(message: "\(name):\(method): \(why)") }
        var query = Query()
        for (key, _) in t.hash {
            guard let k = key.stringValue, ["where", "orderBy", "descending", "limit", "offset"].contains(k) else {
                throw fail(
                    "unknown query field \(key.stringValue ?? key.description); a query takes where, orderBy, descending, limit and offset"
                )
            }
        }
        if let filters = value["where"] {
            guard case .table(let w) = filters, w.array.isEmpty else {
                throw fail("'where' must be a table of field = value")
            }
            for (k, v) in w.hash.sorted(by: { "\($0.key)" < "\($1.key)" }) {
                guard let field = k.stringValue else { throw fail("'where' keys must be field names (got \(k))") }
                query = query.and(field, equals: try RepositoryService.recordValue(v, path: "where.\(field)"))
            }
        }
        var descending = false
        if let d = value["descending"] {
            guard let b = d.boolValue else { throw fail("'descending' must be a boolean") }
            descending = b
        }
        switch value["orderBy"] {
        case nil: break
        case .string(let field)?: query = query.sorted(by: field.description, ascending: !descending)
        case .table(let fields)? where fields.hash.isEmpty:
            for f in fields.array {
                guard let field = f.stringValue else { throw fail("'orderBy' must be a field name or a list of them") }
                query = query.sorted(by: field, ascending: !descending)
            }
        default: throw fail("'orderBy' must be a field name or a list of them")
        }
        for key in ["limit", "offset"] {
            guard let v = value[key] else { continue }
            guard let n = v.intValue, n >= 0 else { throw fail("'\(key)' must be a whole number, 0 or more") }
            if key == "limit" { query.limit = Int(n) } else { query.offset = Int(n) }
        }
        return query
    }
}
