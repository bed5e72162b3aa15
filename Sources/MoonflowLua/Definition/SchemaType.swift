import LuaKit

/// A type in the schema language that a feature's `state` (and its actions' and
/// mutations' fields) are declared in:
///
///     "string" "integer" "number" "boolean" "table" "any"   -- scalars; a trailing ? makes one optional
///     { "list", of = T }          -- a sequence of T          ({ "list?", of = T }: optional)
///     { "map", of = T }           -- string keys to T         ({ "map?", of = T })
///     { "enum", "idle", "busy" }  -- one of these strings     ({ "enum?", ... })
///     { id = "integer", ... }     -- a record of named fields ({ "record?", id = "integer" })
///
/// `table` is any table, unchecked inside; `any` is any value.
public indirect enum SchemaType: Sendable, Equatable, CustomStringConvertible {
    case scalar(FlatShapes.FieldType)
    case list(SchemaType)
    case map(SchemaType)
    case enumeration(EnumValues)
    /// Fields sorted by name.
    case record([RecordField])
    /// The value may be nil (absent).
    case optional(SchemaType)

    public struct RecordField: Sendable, Equatable {
        public let name: String
        public let type: SchemaType
        /// `name` as the Lua string a key is compared with (made once).
        let key: LuaValue
        public init(name: String, type: SchemaType) {
            self.name = name; self.type = type; key = .string(LuaString(name))
        }
        /// A field keyed by the Lua string as declared, bytes and all (`name` is its text, for
        /// messages): a key that is not UTF-8 (`"\xff"`) matches the same key in a value.
        package init(key: LuaString, type: SchemaType) {
            name = key.description; self.type = type; self.key = .string(key)
        }
    }

    /// An enum's strings in the order declared, with a set that answers whether a string is
    /// one of them at once (an enum of 100,000 values costs a hash per write, not a scan).
    /// Each is kept as its bytes: a value need not be UTF-8.
    public struct EnumValues: Sendable, Equatable, ExpressibleByArrayLiteral {
        /// The values as declared, bytes and all.
        public let strings: [LuaString]
        private let set: Set<LuaString>

        public init(_ strings: [LuaString]) { self.strings = strings; set = Set(strings) }
        package init(_ names: [String]) { self.init(names.map { LuaString($0) }) }
        public init(arrayLiteral names: String...) { self.init(names) }

        /// Whether `s` is one of the values.
        public func contains(_ s: LuaString) -> Bool { set.contains(s) }

        /// The values as text (a byte that is not UTF-8 reads as U+FFFD).
        package var names: [String] { strings.map(\.description) }
        var count: Int { strings.count }

        public static func == (a: EnumValues, b: EnumValues) -> Bool { a.strings == b.strings }

        /// `"idle", "busy"` for a message; past 20 values, the first 10 and how many more.
        var listed: String {
            let shown = strings.prefix(count > 20 ? 10 : count).map { "\"\($0)\"" }.joined(separator: ", ")
            return count > 20 ? shown + " and \(count - 10) more" : shown
        }
    }

    /// The type without its optional wrapper.
    package var required: SchemaType { if case .optional(let t) = self { t.required } else { self } }
    package var isOptional: Bool { if case .optional = self { true } else { false } }

    /// A record's field named `name`.
    package func field(_ name: String) -> SchemaType? {
        guard case .record(let fields) = required else { return nil }
        return fields.first { $0.name == name }?.type
    }

    /// A record's field at the key `key` (compared as Lua compares keys, bytes and all).
    package func field(key: LuaValue) -> SchemaType? {
        guard case .record(let fields) = required else { return nil }
        return fields.first { $0.key == key }?.type
    }

    /// The declaration as Lua source (what `moonflow types --lua` prints), on one line.
    public var description: String { luaSource(indent: nil) }

    /// The declaration as Lua source; with `indent`, records of more than one field
    /// spread over lines, nested by two spaces.
    package func luaSource(indent: Int?) -> String {
        func q(_ s: String) -> String { SchemaType.luaQuoted(LuaString(s)) }
        func key(_ s: String) -> String {
            let identifier =
                s.first.map { $0 == "_" || $0.isLetter } == true
                && s.allSatisfy { $0 == "_" || $0.isLetter || $0.isNumber } && s.allSatisfy(\.isASCII)
            return identifier && !SchemaType.luaKeywords.contains(s) ? s : "[\(q(s))]"
        }
        let optional = isOptional ? "?" : ""
        switch required {
        case .scalar(let t): return q(t.rawValue + optional)
        case .list(let of): return "{ \(q("list" + optional)), of = \(of.luaSource(indent: indent)) }"
        case .map(let of): return "{ \(q("map" + optional)), of = \(of.luaSource(indent: indent)) }"
        case .enumeration(let values):
            return "{ \(([q("enum" + optional)] + values.strings.map(SchemaType.luaQuoted)).joined(separator: ", ")) }"
        case .record(let fields):
            let head = isOptional ? [q("record?")] : []
            let inner = fields.map { "\(key($0.name)) = \($0.type.luaSource(indent: indent.map { $0 + 2 }))" }
            if let indent, fields.count > 1 {
                let pad = String(repeating: " ", count: indent + 2)
                return "{\n" + (head + inner).map { pad + $0 + ",\n" }.joined() + String(repeating: " ", count: indent)
                    + "}"
            }
            let all = head + inner
            return all.isEmpty ? "{}" : "{ \(all.joined(separator: ", ")) }"
        case .optional: fatalError("unreachable: required is never optional")
        }
    }

    /// `s` as a Lua string literal: `\\`, `"`, control characters and bytes that are not
    /// UTF-8 written as escapes, so the literal stays on its line and reads back as `s`.
    package static func luaQuoted(_ s: LuaString) -> String {
        let utf8 = s.isValidUTF8
        var bytes: [UInt8] = []
        for b in s.bytes {
            switch b {
            case UInt8(ascii: "\\"): bytes += Array("\\\\".utf8)
            case UInt8(ascii: "\""): bytes += Array("\\\"".utf8)
            case UInt8(ascii: "\n"): bytes += Array("\\n".utf8)
            case _ where b < 0x20 || b == 0x7F || (b >= 0x80 && !utf8):
                bytes += [UInt8(ascii: "\\"), 0x30 + b / 100, 0x30 + b / 10 % 10, 0x30 + b % 10]
            default: bytes.append(b)
            }
        }
        return "\"" + String(decoding: bytes, as: UTF8.self) + "\""
    }

    /// How deep types may nest in a declaration.
    package static let maxDepth = 64

    static let luaKeywords: Set<String> = [
        "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "goto", "if",
        "in", "local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while",
    ]
}

// MARK: - Reading a declaration

extension SchemaType {
    /// A problem in a declaration, at `path` inside it (`["items", "of", "id"]`).
    public struct DeclarationProblem: Error, Sendable, Equatable, CustomStringConvertible {
        public let message: String
        public let path: [String]
        public var description: String { message }
    }

    /// The type `declaration` declares.
    ///
    /// - Parameter at: where the declaration is, for messages (`state.items`).
    /// - Throws: `DeclarationProblem` naming the place and the fix.
    package static func read(
        _ declaration: LuaValue, at place: String, path: [String] = []
    ) throws(DeclarationProblem) -> SchemaType {
        func problem(_ message: String, _ extra: [String] = []) -> DeclarationProblem {
            DeclarationProblem(message: "\(place): \(message)", path: path + extra)
        }
        // What `moonflow types --lua` writes must load as Lua, whose parser takes about 120
        // nested table constructors; and every check walks the levels.
        guard path.count <= maxDepth else {
            throw problem(
                "a type nested more than \(maxDepth) levels deep (lists, maps and records inside each other); flatten it"
            )
        }
        switch declaration {
        case .string(let s):
            var name = s.description
            let optional = name.hasSuffix("?")
            if optional { name.removeLast() }
            if let t = FlatShapes.FieldType(rawValue: name) { return optional ? .optional(.scalar(t)) : .scalar(t) }
            if ["list", "map", "enum", "record"].contains(name) {
                throw problem(
                    "\"\(s)\" needs a table: { \"\(s)\", \(name == "enum" ? "\"a\", \"b\"" : name == "record" ? "id = \"integer\"" : "of = \"string\"") }"
                )
            }
            let hint = Schema.typeSuggestion(name).map { "did you mean \"\($0)\(optional ? "?" : "")\"? " } ?? ""
            throw problem(
                "unknown type \"\(s)\" (\(hint)use string, integer, number, boolean, table or any, with ? for optional; or a table: { \"list\", of = T }, { \"map\", of = T }, { \"enum\", \"a\", \"b\" }, a record { name = T })"
            )
        case .table(let t):
            var kind = "record", optional = false
            if case .string(let head)? = t.array.first {
                kind = head.description
                if kind.hasSuffix("?") { optional = true; kind.removeLast() }
            } else if let first = t.array.first {
                throw problem(
                    "a composite type starts with its kind, \"list\", \"map\", \"enum\" or \"record\" (got \(first))")
            }
            let result: SchemaType
            switch kind {
            case "list", "map":
                guard t.array.count == 1 else { throw problem("{ \"\(kind)\", of = T } takes no other items") }
                guard let of = t.hash[.string("of")] else {
                    throw problem("{ \"\(kind)\" } needs the type of its items: { \"\(kind)\", of = \"string\" }")
                }
                if let extra = t.hash.keys.first(where: { $0 != .string("of") }) {
                    throw problem("{ \"\(kind)\", of = T } takes only `of` (got \(extra))")
                }
                let element = try read(of, at: place + (kind == "list" ? "[]" : "{}"), path: path + ["of"])
                result = kind == "list" ? .list(element) : .map(element)
            case "enum":
                guard t.hash.isEmpty else {
                    throw problem("an enum lists its strings only: { \"enum\", \"idle\", \"busy\" }")
                }
                // Each value looked up in a set: declaring n values costs n hashes, not n² comparisons.
                var names: [LuaString] = [], seen: Set<LuaString> = []
                names.reserveCapacity(t.array.count - 1)
                for v in t.array.dropFirst() {
                    guard case .string(let s) = v else { throw problem("an enum's values are strings (got \(v))") }
                    guard seen.insert(s).inserted else {
                        throw problem("enum value \"\(LuaValue.escaped(s.description, quote: true))\" is listed twice")
                    }
                    names.append(s)
                }
                guard !names.isEmpty else {
                    throw problem("an enum needs at least one value: { \"enum\", \"idle\", \"busy\" }")
                }
                result = .enumeration(EnumValues(names))
            case "record":
                guard t.array.count <= 1 else {
                    throw problem("a record's fields are named: { id = \"integer\" } (got list items)")
                }
                var fields: [RecordField] = []
                for (k, v) in t.hash.sorted(by: { LuaValue.keyOrder($0.key, $1.key) }) {
                    guard case .string(let name) = k else {
                        throw problem("a record's fields are named by strings (got [\(k)])")
                    }
                    let fieldPlace = place == "" ? name.description : "\(place).\(name)"
                    fields.append(
                        RecordField(key: name, type: try read(v, at: fieldPlace, path: path + [name.description])))
                }
                result = .record(fields)
            default:
                let hint =
                    FeatureDefinition.closest(to: kind, in: ["list", "map", "enum", "record"]).map {
                        "did you mean \"\($0)\"? "
                    } ?? ""
                throw problem(
                    "unknown composite type \"\(kind)\" (\(hint)use \"list\", \"map\", \"enum\" or \"record\")")
            }
            return optional ? .optional(result) : result
        default:
            throw problem(
                "a type is a string (\"integer\") or a table ({ \"list\", of = \"string\" }) (got \(declaration.typeName))"
            )
        }
    }
}

// MARK: - Checking a value

extension SchemaType {
    /// Where `value` breaks the type, as `place: what is wrong`, or nil when it fits.
    /// `place` names the value (`state.items[2].text`); it is made only for a misfit.
    /// `declaredIn` names where a record's fields are declared, for a key it lacks (the
    /// feature's `state`, or an action's entry).
    package func problem(
        with value: LuaValue, at place: @autoclosure () -> String, declaredIn: String = "state"
    ) -> String? {
        if value.isNil {
            return isOptional || self == .scalar(.any) ? nil : "\(place()) is missing (\(self.kind))"
        }
        switch required {
        case .scalar(let t):
            return Schema.matches(value, t) && value.isFinite
                ? nil : "\(place()) must be \(self.kindWithArticle) (got \(SchemaType.describe(value)))"
        case .enumeration(let names):
            guard case .string(let s) = value, names.contains(s) else {
                return "\(place()) must be one of \(names.listed) (got \(SchemaType.describe(value)))"
            }
            return nil
        case .list(let of):
            guard case .table(let t) = value else {
                return "\(place()) must be a list (got \(SchemaType.describe(value)))"
            }
            if let k = t.hash.keys.min(by: LuaValue.keyOrder) {
                return "\(place()) must be a list, with items 1 to n only (got key \(k))"
            }
            for (i, item) in t.array.enumerated() {
                if let p = of.problem(with: item, at: "\(place())[\(i + 1)]", declaredIn: declaredIn) { return p }
            }
            return nil
        case .map(let of):
            guard case .table(let t) = value else {
                return "\(place()) must be a map (got \(SchemaType.describe(value)))"
            }
            for (i, item) in t.array.enumerated() {
                if let p = of.problem(with: item, at: "\(place())[\(i + 1)]", declaredIn: declaredIn) { return p }
            }
            for (k, v) in t.hash {
                guard case .string(let key) = k else {
                    return "\(place()) must be a map with string keys (got key \(k))"
                }
                if let p = of.problem(with: v, at: SchemaType.child(place(), key.description), declaredIn: declaredIn) {
                    return p
                }
            }
            return nil
        case .record(let fields):
            guard case .table(let t) = value else {
                return "\(place()) must be a record (got \(SchemaType.describe(value)))"
            }
            if !t.array.isEmpty { return "\(place()) must be a record of named fields (got list items)" }
            if t.hash.count > fields.count || t.hash.keys.contains(where: { k in !fields.contains { $0.key == k } }),
                let k = t.hash.keys.filter({ k in !fields.contains { $0.key == k } }).min(by: LuaValue.keyOrder)
            {
                return SchemaType.noField(
                    k.stringValue ?? k.description, in: place(), fields: fields.map(\.name), declaredIn: declaredIn)
            }
            for f in fields {
                if let p = f.type.problem(with: t[f.key], at: SchemaType.child(place(), f.name), declaredIn: declaredIn)
                {
                    return p
                }
            }
            return nil
        case .optional: fatalError("unreachable: required is never optional")
        }
    }

    /// The type of what is at `path` below a value of this type, or nil when the path
    /// leaves the declared shape (a field the record lacks, a string key in a list);
    /// `table` and `any` hold anything.
    package func type(at path: ArraySlice<LuaValue>) -> SchemaType? {
        guard let key = path.first else { return self }
        switch required {
        case .scalar(.table), .scalar(.any): return .scalar(.any)
        case .list(let of):
            guard case .integer = key else { return nil }
            return of.type(at: path.dropFirst())
        case .map(let of):
            guard case .string = key else { return nil }
            return of.type(at: path.dropFirst())
        case .record:
            guard case .string = key, let f = field(key: key) else { return nil }
            return f.type(at: path.dropFirst())
        default: return nil
        }
    }

    /// Where a write of `value` at `path` (keys from the root named `root`) breaks this
    /// type, or nil when it fits: what the state check after a reduce asks of each change.
    /// Removing an item of a list or a map (writing nil there) always fits. No text is made
    /// unless it does not fit.
    package func problem(writing value: LuaValue, at path: [LuaValue], root: String) -> String? {
        // The common write, answered without walking: a scalar that fits a record's field.
        if path.count == 1, case .record(let fields) = self {
            for field in fields where field.key == path[0] {
                if case .scalar(let t) = field.type, Schema.matches(value, t), value.isFinite { return nil }
                break
            }
        }
        var type = self, inCollection = false
        func place(_ depth: Int) -> String {
            path.prefix(depth).reduce(root) { place, key in
                if case .string(let k) = key { return SchemaType.child(place, k.description) }
                return "\(place)[\(key)]"
            }
        }
        for (depth, key) in path.enumerated() {
            inCollection = false
            switch type.required {
            case .scalar(.table), .scalar(.any): return nil
            case .list(let of):
                guard case .integer = key else {
                    return "\(place(depth)) is a list: its keys are 1, 2, 3... (got \(key))"
                }
                type = of; inCollection = true
            case .map(let of):
                guard case .string = key else { return "\(place(depth)) is a map: its keys are strings (got \(key))" }
                type = of; inCollection = true
            case .record(let fields):
                guard let f = fields.first(where: { $0.key == key }) else {
                    return SchemaType.noField(
                        key.stringValue ?? key.description, in: place(depth), fields: fields.map(\.name))
                }
                type = f.type
            default:
                return "\(place(depth)) must be \(type.kindWithArticle), not a table"
            }
        }
        if value.isNil && inCollection { return nil }
        return type.problem(with: value, at: place(path.count))
    }

    /// "state has no field 'hasMroe' (did you mean 'hasMore'?); declare it ...": for a key a
    /// record does not declare (a strict read or write, the state check after a reduce).
    package static func noField(
        _ key: String, in place: String, fields: [String], declaredIn: String = "state"
    ) -> String {
        let home = declaredIn == "state" ? "the feature's `state`" : declaredIn
        return "\(place) has no field '\(key)' (\(fieldHint(key, fields: fields))); declare it in \(home)"
    }

    /// "did you mean 'hasMore'?", or the fields there are.
    package static func fieldHint(_ key: String, fields: [String]) -> String {
        FeatureDefinition.closest(to: key, in: fields).map { "did you mean '\($0)'?" }
            ?? (fields.isEmpty ? "it declares no fields" : "declared: \(fields.joined(separator: ", "))")
    }

    /// `state.items`, `state["a b"]`, `state.items[3]`.
    static func child(_ place: String, _ key: String) -> String {
        let identifier =
            key.first.map { $0 == "_" || ($0.isASCII && $0.isLetter) } == true
            && key.allSatisfy { $0 == "_" || ($0.isASCII && ($0.isLetter || $0.isNumber)) }
        return identifier ? "\(place).\(key)" : "\(place)[\"\(key)\"]"
    }

    /// "integer", "list of string", "enum", ... for messages.
    var kind: String {
        switch required {
        case .scalar(let t): t.rawValue
        case .list: "a list"
        case .map: "a map"
        case .enumeration(let names): "one of \(names.listed)"
        case .record: "a record"
        case .optional: ""
        }
    }

    var kindWithArticle: String {
        if case .scalar(let t) = required { return (t == .integer || t == .any ? "an " : "a ") + t.rawValue }
        return kind
    }

    static func describe(_ v: LuaValue) -> String {
        switch v {
        case .integer(let i): "integer \(i)"
        case .number(let d): "number \(LuaValue.formatNumber(d))"
        case .string(let s): s.bytes.count > 60 ? "a string of \(s.bytes.count) bytes" : "string \"\(s)\""
        case .boolean(let b): "boolean \(b)"
        case .table: "a table"
        case .nil: "nil"
        }
    }
}

extension LuaValue {
    /// False for a NaN or an infinite number; true for everything else.
    var isFinite: Bool { if case .number(let d) = self { d.isFinite } else { true } }
}

// MARK: - The shape views check

extension SchemaType {
    /// What the state's views check a field against (`LuaDispatch.setShape`): a record
    /// is `{ r = { field = shape } }`, a list `{ l = shape }`, a map `{ m = shape }`, and
    /// `false` anything not looked inside (a scalar, an enum, `table`, `any`). `t` says what
    /// a plain scalar written there may be for the write to wait in Lua until the state is
    /// read (the C `fits`, views.c): a record's `{ field = code }`, a list's or map's item
    /// code (`scalarCode`).
    package var viewShape: LuaValue {
        switch required {
        case .record(let fields):
            var r = LuaTable(), t = LuaTable()
            for f in fields {
                r[f.key] = f.type.viewShape
                if let code = f.type.scalarCode { t[f.key] = code }
            }
            return .table(LuaTable(hash: ["r": .table(r), "t": .table(t)]))
        case .list(let of), .map(let of):
            var shape = LuaTable(hash: [isList ? "l" : "m": of.viewShape])
            if let code = of.scalarCode { shape["t"] = code }
            return .table(shape)
        default: return .boolean(false)
        }
    }

    private var isList: Bool { if case .list = required { true } else { false } }

    /// A scalar type's name ("integer", "any"), an enum's names as `{ name = true }`, or nil
    /// for a list, map or record (a scalar written where one is declared is read at once).
    private var scalarCode: LuaValue? {
        switch required {
        case .scalar(let t): return .string(LuaString(t.rawValue))
        case .enumeration(let names):
            var set = LuaTable()
            for name in names.strings { set[.string(name)] = true }
            return .table(set)
        default: return nil
        }
    }
}

// MARK: - Inferring a declaration from a value

extension SchemaType {
    /// The type `initial` suggests, for a feature that declares no `state`: scalars by
    /// their type, a non-empty list by its first item, a record by its fields; an empty
    /// table is `table` (nothing says what it will hold).
    package static func inferred(from value: LuaValue) -> SchemaType {
        switch value {
        case .nil: return .scalar(.any)
        case .boolean: return .scalar(.boolean)
        case .integer: return .scalar(.integer)
        case .number: return .scalar(.number)
        case .string: return .scalar(.string)
        case .table(let t):
            if t.isEmpty { return .scalar(.table) }
            if t.hash.isEmpty { return .list(inferred(from: t.array[0]).widened(by: t.array.dropFirst())) }
            if !t.array.isEmpty { return .scalar(.table) }
            guard t.hash.keys.allSatisfy({ if case .string = $0 { true } else { false } }) else {
                return .scalar(.table)
            }
            return .record(
                t.hash.sorted(by: { LuaValue.keyOrder($0.key, $1.key) }).compactMap {
                    guard case .string(let key) = $0.key else { return nil }
                    return RecordField(key: key, type: inferred(from: $0.value))
                })
        }
    }

    /// This type, made to fit every one of `others` too (integer and number make number;
    /// anything else that disagrees makes the loosest type).
    private func widened(by others: ArraySlice<LuaValue>) -> SchemaType {
        var t = self
        for v in others where t.problem(with: v, at: "") != nil {
            let u = SchemaType.inferred(from: v)
            if (t == .scalar(.integer) && u == .scalar(.number)) || (t == .scalar(.number) && u == .scalar(.integer)) {
                t = .scalar(.number)
            } else if case .table = v {
                t = .scalar(.table)
            } else {
                t = .scalar(.any)
            }
        }
        return t
    }
}
