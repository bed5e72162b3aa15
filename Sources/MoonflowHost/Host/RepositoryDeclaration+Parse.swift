import LuaKit
import LuaRepositories
import MoonflowLua

/// A feature definition's `repositories`, read into declarations (MoonflowRepositories'
/// `RepositoryDeclaration`).
extension RepositoryDeclaration {
    /// Every declaration of `definition`, sorted by name.
    ///
    /// - Throws: `HostError` naming the field and the fix.
    static func all(in definition: FeatureDefinition, lua: LuaState) throws -> [RepositoryDeclaration] {
        let declared: LuaValue = try lua.rawGet(definition.table, "repositories") {
            try $0.value(1, path: "repositories")
        }
        guard !declared.isNil else { return [] }
        let what = "\(definition.name): repositories"
        guard case .table(let table) = declared, table.array.isEmpty else {
            throw HostError(
                "\(what) must be a table of name = { seed = { records... } } or name = { sqlite = \"NAME.db\", ... }")
        }
        return try table.hash.sorted(by: { "\($0.key)" < "\($1.key)" }).map { key, spec in
            guard let name = key.stringValue, case .table(let fields) = spec, fields.array.isEmpty else {
                throw HostError(
                    "\(what).\(key) must be a table like { seed = { {id = 1, name = \"Ada\"} } } or { sqlite = \"\(key).db\" }"
                )
            }
            return try RepositoryDeclaration(name: name, spec: spec, fields: fields, what: "\(what).\(name)")
        }
    }

    private init(name: String, spec: LuaValue, fields: LuaTable, what: String) throws {
        let file: String?
        let indexes: [String]
        for (k, _) in fields.hash where !["seed", "sqlite", "indexes"].contains(k.stringValue ?? "") {
            throw HostError("\(what): unknown field \(k); a repository declaration takes seed, sqlite and indexes")
        }
        switch spec["sqlite"] {
        case nil: file = nil
        case .string(let declared)? where !declared.description.isEmpty: file = declared.description
        default:
            throw HostError(
                "\(what).sqlite must be a file name like \"\(name).db\" (relative to the plugin folder, or absolute)")
        }
        switch spec["indexes"] {
        case nil: indexes = []
        case .table(let list)? where list.hash.isEmpty:
            indexes = try list.array.enumerated().map { i, v in
                guard let field = v.stringValue, !field.isEmpty, !field.contains("\"") else {
                    throw HostError(
                        "\(what).indexes[\(i + 1)] must be a field name (a string without double quotes), like \"team\""
                    )
                }
                return field
            }
        default: throw HostError("\(what).indexes must be a list of field names like { \"team\", \"name\" }")
        }
        if !indexes.isEmpty, file == nil {
            throw HostError("\(what).indexes needs sqlite = \"\(name).db\": only SQLite repositories have indexes")
        }
        var seed: [LuaRecord] = []
        switch spec["seed"] {
        case nil: break
        case .table(let list)? where list.hash.isEmpty:
            for (i, v) in list.array.enumerated() {
                do { seed.append(try LuaRecord(lua: v)) } catch let e as RepositoryServiceError {
                    throw HostError("\(what).seed[\(i + 1)]: \(e.message)")
                }
            }
        default:
            throw HostError("\(what).seed must be a list of records like { {id = 1, name = \"Ada\"} }")
        }
        self.init(name: name, file: file, indexes: indexes, seed: seed)
    }
}
