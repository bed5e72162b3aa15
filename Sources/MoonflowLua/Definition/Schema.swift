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

    /// One declared field: its type in the schema language `state` uses (`SchemaType`), and
    /// what the in-place check (`FlatShapes`) makes of it: a list, map, enum or record is a
    /// `table` there, which that check never vouches for, so a value with one is checked in full.
    public struct Field: Sendable, Equatable {
        /// The scalar type, or `table` for a composite one.
        public let type: FieldType
        public let optional: Bool
        /// A list, map, enum or record as declared (not optional); nil for a scalar. Only these
        /// are kept as a `SchemaType`: a scalar field makes no allocation (a schema lives as long
        /// as its feature, and the tool may exit on a signal with it alive).
        private let compositeType: SchemaType?

        /// The type as declared (`{ "list", of = { id = "integer" } }`), optional or not.
        public var declared: SchemaType {
            let base = compositeType ?? .scalar(type)
            return optional ? .optional(base) : base
        }

        public init(type: FieldType, optional: Bool = false) {
            self.type = type
            self.optional = optional
            compositeType = nil
        }

        public init(declared: SchemaType) {
            optional = declared.isOptional
            if case .scalar(let t) = declared.required {
                type = t
                compositeType = nil
            } else {
                type = .table
                compositeType = declared.required
            }
        }

        /// The type as a message or a listing spells it: `integer?`, `{ "list", of = "string" }`.
        public var spelled: String {
            if case .scalar = declared.required { return type.rawValue + (optional ? "?" : "") }
            return declared.description
        }

        /// Lists, maps, enums and records: what the flat type does not say in full.
        package var composite: SchemaType? { compositeType }

        var flat: FlatShapes.Field { FlatShapes.Field(type: type, optional: optional) }
    }

    /// "action" or "mutation": used in messages.
    public let kind: String
    public let shapes: [String: [String: Field]]

    public init(kind: String, declaration: LuaValue) throws {
        let (shapes, problems) = Schema.read(kind: kind, declaration: declaration)
        if let first = problems.first { throw SchemaError(first.message) }
        self.kind = kind
        self.shapes = shapes
        compile()
    }

    /// A problem with a declaration, at `path` inside it (`["send", "text"]`).
    public struct Problem: Sendable, Equatable {
        public let message: String
        public let path: [String]
    }

    /// The shapes `declaration` declares and every problem with it, each at its
    /// path (what `moonflow check` lists all at once); the shapes hold only the
    /// entries without problems.
    public static func read(
        kind: String, declaration: LuaValue
    ) -> (shapes: [String: [String: Field]], problems: [Problem]) {
        guard case .table(let t) = declaration else {
            return (
                [:],
                [
                    Problem(
                        message:
                            "\(kind)s must be a table of names to field declarations (got \(declaration.typeName))",
                        path: [])
                ]
            )
        }
        var shapes: [String: [String: Field]] = [:]
        var problems: [Problem] = []
        for (key, value) in t.entries.sorted(by: { LuaValue.keyOrder($0.key, $1.key) }) {
            guard case .string(let name) = key else {
                problems.append(
                    Problem(
                        message: "\(kind)s: every key must be \(Schema.withArticle(kind)) name (got \(key))", path: []))
                continue
            }
            let at = [name.description]
            guard case .table(let fields) = value else {
                problems.append(
                    Problem(
                        message:
                            "\(kind) '\(name)': declare its fields as a table, e.g. { text = \"string\" } or {} (got \(value.typeName))",
                        path: at))
                continue
            }
            var shape: [String: Field] = [:]
            var fine = true
            for (fk, fv) in fields.entries.sorted(by: { LuaValue.keyOrder($0.key, $1.key) }) {
                // A list, map, enum or record, in the language `state` is declared in.
                if case .string(let fname) = fk, case .table = fv, fname.description != "type" {
                    do {
                        shape[fname.description] = Field(
                            declared: try SchemaType.read(
                                fv, at: "\(kind) '\(name)'.\(fname)", path: at + [fname.description]))
                    } catch {
                        problems.append(Problem(message: error.message, path: error.path))
                        fine = false
                    }
                    continue
                }
                guard case .string(let fname) = fk, case .string(let ftype) = fv else {
                    problems.append(
                        Problem(
                            message:
                                "\(kind) '\(name)': fields are declared as name = \"type\" or a composite type such as { \"list\", of = \"string\" } (got [\(fk)] = \(fv))",
                            path: at + [fk.stringValue ?? ""]))
                    fine = false
                    continue
                }
                var typeName = ftype.description
                let optional = typeName.hasSuffix("?")
                if optional { typeName.removeLast() }
                guard let type = FieldType(rawValue: typeName) else {
                    let hint =
                        Schema.typeSuggestion(typeName).map { "did you mean \"\($0)\(optional ? "?" : "")\"? " } ?? ""
                    problems.append(
                        Problem(
                            message:
                                "\(kind) '\(name)': field '\(fname)' has unknown type \"\(ftype)\" (\(hint)use string, integer, number, boolean, table or any, with ? for optional)",
                            path: at + [fname.description]))
                    fine = false
                    continue
                }
                if fname.description == "type" {
                    problems.append(
                        Problem(
                            message: "\(kind) '\(name)': 'type' is reserved for the \(kind)'s name", path: at + ["type"]
                        ))
                    fine = false
                    continue
                }
                shape[fname.description] = Field(type: type, optional: optional)
            }
            if fine { shapes[name.description] = shape }
        }
        return (shapes, problems)
    }

    /// The field type meant by a name that is not one: another language's name for
    /// it (`int`, `bool`, `str`, `float`, `list`) or a typo (`tabel`).
    static func typeSuggestion(_ name: String) -> String? {
        let aliases = [
            "int": "integer", "i64": "integer", "long": "integer", "bool": "boolean", "str": "string",
            "text": "string", "float": "number", "double": "number", "real": "number",
            "list": "table", "array": "table", "object": "table", "dict": "table", "map": "table",
        ]
        if let alias = aliases[name.lowercased()] { return alias }
        return FeatureDefinition.closest(to: name, in: FieldType.allCases.map(\.rawValue))
    }

    /// The declared names, sorted.
    public var names: [String] { shapes.keys.sorted() }

    /// Per name, what validation walks: the fields in name order with their keys
    /// already made, and the set of allowed keys (computed once, not per value).
    private struct Compiled: Sendable {
        let fields: [(key: LuaValue, name: String, field: Field)]
        let allowed: Set<LuaValue>
        /// Whether every field is optional: a value with `type` alone then fits as it is,
        /// with no lookup of each field (`reset`, `refresh`, `increment` without `by`).
        let allOptional: Bool
    }
    private var compiled: [LuaString: Compiled] = [:]
    private static let typeKey: LuaValue = "type"
    /// The same declarations, for checking a table where it is, in Lua
    /// (`LuaSlots.matches`): what passes there needs no validation here.
    package private(set) var flat = FlatShapes([:])

    private mutating func compile() {
        for (name, shape) in shapes {
            let fields = shape.sorted { $0.key < $1.key }.map {
                (key: LuaValue.string(LuaString($0.key)), name: $0.key, field: $0.value)
            }
            compiled[LuaString(name)] = Compiled(
                fields: fields, allowed: Set(fields.map(\.key) + [Schema.typeKey]),
                allOptional: fields.allSatisfy(\.field.optional))
        }
        flat = FlatShapes(shapes.mapValues { $0.mapValues(\.flat) })
    }

    /// Checks `value` against its declaration.
    ///
    /// - Returns: the name (`type`), as the Lua string it is.
    /// - Throws: `SchemaError` naming the \(kind), the field and the expected type.
    @discardableResult
    public func validate(_ value: LuaValue) throws -> LuaString {
        guard case .table(let t) = value else {
            throw SchemaError(
                "\(Schema.withArticle(kind)) must be a table with a string 'type' (got \(value.typeName))")
        }
        guard case .string(let typeString) = t[Schema.typeKey] else {
            throw SchemaError(
                "\(Schema.withArticle(kind)) needs a string field 'type' naming it (got \(t["type"].typeName)); declared: \(names.joined(separator: ", "))"
            )
        }
        guard let shape = compiled[typeString] else {
            let name = typeString.description
            throw SchemaError(
                "undeclared \(kind) '\(name)'; declared \(kind)s: \(names.joined(separator: ", ")). Add it to the feature's `\(kind == "effect" ? "outputs" : "\(kind)s")` table"
            )
        }
        if shape.allOptional && t.hash.count == 1 && t.array.isEmpty { return typeString }
        var name: String { typeString.description }  // only messages need it decoded
        // Every problem is named, not the first: a refused action is fixed in one go.
        var problems: [String] = []
        var present = 0
        for (key, fieldName, field) in shape.fields {
            let v = t[key]
            if v.isNil {
                if !field.optional { problems.append("missing field '\(fieldName)' (\(field.type.rawValue))") }
                continue
            }
            if let composite = field.composite {
                if let problem = composite.problem(with: v, at: fieldName, declaredIn: "\(kind) '\(name)'") {
                    problems.append(problem)
                }
                present += 1
                continue
            }
            guard Schema.matches(v, field.type) else {
                problems.append(
                    "field '\(fieldName)' must be \(article(field.type)) \(field.type.rawValue) (got \(describe(v)))")
                present += 1
                continue
            }
            present += 1
        }
        // Every key is `type` or a declared field unless there are more keys than those.
        var undeclared: [String] = []
        for (key, _) in t.hash where t.hash.count != present + 1 && !shape.allowed.contains(key) {
            guard case .string(let k) = key else {
                problems.append("unexpected key [\(key)]")
                continue
            }
            undeclared.append(k.description)
        }
        if !undeclared.isEmpty {
            let declared =
                shape.fields.isEmpty
                ? "it declares no fields" : "declared fields: \(shape.fields.map(\.name).joined(separator: ", "))"
            let which = undeclared.sorted().map { "'\($0)'" }.joined(separator: ", ")
            problems.append("undeclared field\(undeclared.count == 1 ? "" : "s") \(which); \(declared)")
        }
        if !t.array.isEmpty { problems.append("unexpected list items; use named fields") }
        guard problems.isEmpty else { throw SchemaError("\(kind) '\(name)': \(problems.joined(separator: "; "))") }
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
    package static func withArticle(_ kind: String) -> String {
        "aeiou".contains(kind.first ?? "x") ? "an \(kind)" : "a \(kind)"
    }

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
