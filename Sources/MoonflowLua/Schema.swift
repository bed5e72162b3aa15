import LuaKit

/// Declared action or mutation shapes: `{ query = { text = "string" }, clear = {} }`.
///
///     let schema = try Schema(kind: "action", declaration: ["query": ["text": "string"]])
///     try schema.validate(["type": "query", "text": 3])
///     // action 'query': field 'text' must be a string (got integer 3)
public struct Schema: Sendable {
    /// The type a field declares; a trailing `?` makes it optional. The same types as
    /// the in-place check (`FlatShapes`) uses, so a schema compiles into one as it is.
    public typealias FieldType = FlatShapes.FieldType
    public typealias Field = FlatShapes.Field

    /// "action" or "mutation": used in messages.
    public let kind: String
    public let shapes: [String: [String: Field]]

    public init(kind: String, declaration: LuaValue) throws {
        self.kind = kind
        guard case .table(let t) = declaration else {
            throw SchemaError("\(kind)s must be a table of names to field declarations (got \(declaration.typeName))")
        }
        var shapes: [String: [String: Field]] = [:]
        for (key, value) in t.entries {
            guard case .string(let name) = key else {
                throw SchemaError("\(kind)s: every key must be \(Schema.withArticle(kind)) name (got \(key))")
            }
            guard case .table(let fields) = value else {
                throw SchemaError("\(kind) '\(name)': declare its fields as a table, e.g. { text = \"string\" } or {} (got \(value.typeName))")
            }
            var shape: [String: Field] = [:]
            for (fk, fv) in fields.entries {
                guard case .string(let fname) = fk, case .string(let ftype) = fv else {
                    throw SchemaError("\(kind) '\(name)': fields are declared as name = \"type\" (got [\(fk)] = \(fv))")
                }
                var typeName = ftype.description
                let optional = typeName.hasSuffix("?")
                if optional { typeName.removeLast() }
                guard let type = FieldType(rawValue: typeName) else {
                    throw SchemaError("\(kind) '\(name)': field '\(fname)' has unknown type \"\(ftype)\" (use string, integer, number, boolean, table or any, with ? for optional)")
                }
                if fname.description == "type" {
                    throw SchemaError("\(kind) '\(name)': 'type' is reserved for the \(kind)'s name")
                }
                shape[fname.description] = Field(type: type, optional: optional)
            }
            shapes[name.description] = shape
        }
        self.shapes = shapes
        compile()
    }

    /// The declared names, sorted.
    public var names: [String] { shapes.keys.sorted() }

    /// Per name, what validation walks: the fields in name order with their keys
    /// already made, and the set of allowed keys (computed once, not per value).
    private struct Compiled: Sendable {
        let fields: [(key: LuaValue, name: String, field: Field)]
        let allowed: Set<LuaValue>
    }
    private var compiled: [LuaString: Compiled] = [:]
    private static let typeKey: LuaValue = "type"
    /// The same declarations, for checking a table where it is, in Lua
    /// (`LuaSlots.matches`): what passes there needs no validation here.
    package private(set) var flat = FlatShapes([:])

    private mutating func compile() {
        for (name, shape) in shapes {
            let fields = shape.sorted { $0.key < $1.key }.map { (key: LuaValue.string(LuaString($0.key)), name: $0.key, field: $0.value) }
            compiled[LuaString(name)] = Compiled(fields: fields, allowed: Set(fields.map(\.key) + [Schema.typeKey]))
        }
        flat = FlatShapes(shapes)
    }

    /// Checks `value` against its declaration.
    ///
    /// - Returns: the name (`type`), as the Lua string it is.
    /// - Throws: `SchemaError` naming the \(kind), the field and the expected type.
    @discardableResult
    public func validate(_ value: LuaValue) throws -> LuaString {
        guard case .table(let t) = value else {
            throw SchemaError("\(Schema.withArticle(kind)) must be a table with a string 'type' (got \(value.typeName))")
        }
        guard case .string(let typeString) = t[Schema.typeKey] else {
            throw SchemaError("\(Schema.withArticle(kind)) needs a string field 'type' naming it (got \(t["type"].typeName)); declared: \(names.joined(separator: ", "))")
        }
        guard let shape = compiled[typeString] else {
            let name = typeString.description
            throw SchemaError("undeclared \(kind) '\(name)'; declared \(kind)s: \(names.joined(separator: ", ")). Add it to the feature's `\(kind)s` table")
        }
        var name: String { typeString.description }  // only messages need it decoded
        var present = 0
        for (key, fieldName, field) in shape.fields {
            let v = t[key]
            if v.isNil {
                if field.optional { continue }
                throw SchemaError("\(kind) '\(name)': missing field '\(fieldName)' (\(field.type.rawValue))")
            }
            guard Schema.matches(v, field.type) else {
                throw SchemaError("\(kind) '\(name)': field '\(fieldName)' must be \(article(field.type)) \(field.type.rawValue) (got \(describe(v)))")
            }
            present += 1
        }
        // Every key is `type` or a declared field unless there are more keys than those.
        for (key, _) in t.hash where t.hash.count != present + 1 && !shape.allowed.contains(key) {
            guard case .string(let k) = key else {
                throw SchemaError("\(kind) '\(name)': unexpected key [\(key)]")
            }
            let declared = shape.fields.isEmpty ? "it declares no fields" : "declared fields: \(shape.fields.map(\.name).joined(separator: ", "))"
            throw SchemaError("\(kind) '\(name)': undeclared field '\(k)'; \(declared)")
        }
        if !t.array.isEmpty { throw SchemaError("\(kind) '\(name)': unexpected list items; use named fields") }
        return typeString
    }

    static func matches(_ v: LuaValue, _ type: FieldType) -> Bool {
        switch (type, v) {
        case (.any, _): true
        case (.string, .string), (.integer, .integer), (.boolean, .boolean), (.table, .table): true
        case (.number, .integer), (.number, .number): true
        default: false
        }
    }

    /// "an action", "a mutation".
    static func withArticle(_ kind: String) -> String { "aeiou".contains(kind.first ?? "x") ? "an \(kind)" : "a \(kind)" }

    private func article(_ t: FieldType) -> String { t == .integer || t == .any ? "an" : "a" }

    private func describe(_ v: LuaValue) -> String {
        switch v {
        case .integer(let i): "integer \(i)"
        case .number(let d): "number \(LuaValue.formatNumber(d))"
        case .string(let s): "string \"\(s)\""
        case .boolean(let b): "boolean \(b)"
        case .table: "a table"
        case .nil: "nil"
        }
    }
}

/// A schema violation; its message names the action or mutation, the field and the expected type.
public struct SchemaError: Error, Sendable, CustomStringConvertible, Equatable {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
