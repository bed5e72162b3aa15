import LuaKit
import Streams

/// A validated `mf.feature{...}` (or `mf.compose`, `mf.interactor`) table: the
/// data parts copied into Swift, the functions left in Lua and looked up by
/// name at dispatch time (so a reload swaps them all at once).
package struct FeatureDefinition: @unchecked Sendable {
    package enum Kind: String, Sendable { case feature, compose, interactor }

    package let kind: Kind
    package let name: String
    /// State shape version (hot reload migrates when it changes).
    package let version: Int64
    package let initial: LuaValue
    /// The declared `state` (a record), or nil when the feature declares none.
    package let declaredState: SchemaType?
    /// What the state is checked against: the declared `state`, or, without one, the
    /// record `initial` suggests (`SchemaType.inferred`), whose unknown reads only warn.
    package var stateType: SchemaType { declaredState ?? SchemaType.inferred(from: initial) }
    package let actions: Schema
    /// Whether `actions` is declared: always for a feature; for an `mf.compose`, when it
    /// gives `actions` (then each action is checked against them before `route`).
    package let declaresActions: Bool
    package let mutations: Schema
    /// The declared outward effects (`outputs`: the effects that go out to the host, by
    /// name, with their fields), or nil when the feature declares none.
    package let outputs: Schema?
    /// Flatten strategy per action name (merge when absent).
    package let strategies: [String: FlattenStrategy]
    /// Effect types with an internal handler.
    package let effectHandlers: Set<String>
    /// Request names of an `mf.interactor`.
    package let requests: [String]
    package let hasMigrate: Bool
    /// `file:line` where each function is defined, by its place in the table:
    /// `handle`, `reduce`, `effects.fetch`, `requests.paginate`, `route`, ...
    package let locations: [String: String]
    /// The definition table in Lua.
    package let table: LuaRef

    /// Reads and validates the definition at `slots[i]`.
    ///
    /// - Throws: `DefinitionError` naming the field and what it must be.
    package static func read(_ slots: LuaSlots, _ i: Int, kind expected: Kind?) throws -> FeatureDefinition {
        guard slots.isTable(i) else {
            throw DefinitionError("a definition must be a table (got \(slots.typeName(i)))")
        }
        func field<R>(_ key: String, _ body: (LuaSlots) throws -> R) throws -> R { try slots.field(i, key, body) }
        func type(_ key: String) throws -> String { try field(key) { $0.typeName(1) } }
        func value(_ key: String) throws -> LuaValue {
            try field(key) { try $0.value(1, path: key) }
        }

        let marked = try value("__moonflow").stringValue.flatMap(Kind.init(rawValue:))
        let kind: Kind
        if let expected {
            kind = expected
        } else if let marked {
            kind = marked
        } else if try type("children") == "table" {
            kind = .compose
        } else if try type("requests") == "table" {
            kind = .interactor
        } else {
            kind = .feature
        }
        let what = "mf.\(kind.rawValue)"

        // Every independent problem is collected, so `moonflow check` lists them all at once.
        var problems: [DefinitionError.Problem] = []
        func attempt<R>(_ fallback: R, _ body: () throws -> R) throws -> R {
            do { return try body() } catch let e as DefinitionError {
                problems += e.problems
                return fallback
            }
        }
        let name: String = try attempt("?") {
            guard case .string(let name) = try value("name"), !name.bytes.isEmpty else {
                throw DefinitionError(
                    "\(what): field 'name' must be a non-empty string (got \(try type("name")))", at: ["name"])
            }
            return name.description
        }
        let label = name == "?" ? what : "\(what) '\(name)'"
        let version: Int64 = try attempt(1) {
            switch try value("version") {
            case .nil: return 1
            case .integer(let v): return v
            default:
                throw DefinitionError(
                    "\(label): field 'version' must be an integer (got \(try type("version")))", at: ["version"])
            }
        }
        try attempt(()) {
            var unknown: [String] = []
            try slots.forEachField(i) { key, _ in if !kind.fields.contains(key) { unknown.append(key) } }
            for key in unknown.sorted() {
                let hint =
                    FeatureDefinition.closest(to: key, in: kind.fields).map { "; did you mean `\($0)`?" }
                    ?? "; \(what) takes \(kind.fields.filter { !$0.hasPrefix("__") }.joined(separator: ", "))"
                problems.append(.init(message: "\(label): unknown field '\(key)'\(hint)", path: [key]))
            }
        }
        var locations: [String: String] = [:]
        func requireFunction(_ key: String) throws {
            try field(key) { s in
                guard s.typeName(1) == "function" else {
                    throw DefinitionError(
                        "\(label): field '\(key)' must be a function (got \(s.typeName(1)))", at: [key])
                }
                locations[key] = s.definitionLocation(1)
            }
        }
        func optionalFunction(_ key: String) throws -> Bool {
            try field(key) { s in
                if s.isNil(1) { return false }
                guard s.typeName(1) == "function" else {
                    throw DefinitionError(
                        "\(label): field '\(key)' must be a function when given (got \(s.typeName(1)))", at: [key])
                }
                locations[key] = s.definitionLocation(1)
                return true
            }
        }
        func functionTable(_ key: String) throws -> [String] {
            try field(key) { s in
                if s.isNil(1) { return [] }
                guard s.isTable(1) else {
                    throw DefinitionError(
                        "\(label): field '\(key)' must be a table of functions (got \(s.typeName(1)))", at: [key])
                }
                var names: [String] = []
                try s.forEachField(1) { k, valueType in
                    guard valueType == "function" else {
                        throw DefinitionError(
                            "\(label): \(key).\(k) must be a function (got \(valueType))", at: [key, k])
                    }
                    names.append(k)
                }
                for k in names { try s.field(1, k) { locations["\(key).\(k)"] = $0.definitionLocation(1) } }
                return names.sorted()
            }
        }
        func finish(
            initial: LuaValue = .nil, declaredState: SchemaType? = nil, actions: Schema? = nil,
            mutations: Schema? = nil, outputs: Schema? = nil,
            strategies: [String: FlattenStrategy] = [:], effectHandlers: [String] = [],
            requests: [String] = [], hasMigrate: Bool = false
        ) throws -> FeatureDefinition {
            if !problems.isEmpty { throw DefinitionError(problems: problems) }
            return FeatureDefinition(
                kind: kind, name: name, version: version, initial: initial, declaredState: declaredState,
                actions: try actions ?? Schema(kind: "action", declaration: .table(LuaTable())),
                declaresActions: kind == .feature || actions != nil,
                mutations: try mutations ?? Schema(kind: "mutation", declaration: .table(LuaTable())),
                outputs: outputs,
                strategies: strategies, effectHandlers: Set(effectHandlers), requests: requests,
                hasMigrate: hasMigrate, locations: locations, table: try slots.ref(i))
        }

        // The declared state: a record in the schema language; `initial`, when there is one, must fit it.
        func readState(initial: LuaValue) throws -> SchemaType? {
            try attempt(nil) { () throws -> SchemaType? in
                let declaration: LuaValue
                do { declaration = try value("state") } catch let e as LuaError {
                    throw DefinitionError("\(label): field 'state' cannot be read: \(e.description)", at: ["state"])
                }
                if declaration.isNil { return nil }
                guard case .table(let t) = declaration, t.array.isEmpty else {
                    throw DefinitionError(
                        "\(label): field 'state' must be a table declaring each field of the state, e.g. { count = \"integer\", items = { \"list\", of = \"string\" } } (got \(declaration.typeName))",
                        at: ["state"])
                }
                let type: SchemaType
                do {
                    type = try DeclarationCache.state(declaration) { () throws(SchemaType.DeclarationProblem) in
                        try SchemaType.read(declaration, at: "state")
                    }
                } catch let error
                    as SchemaType.DeclarationProblem
                {
                    throw DefinitionError("\(label): \(error.message)", at: ["state"] + error.path)
                }
                if case .table = initial, let problem = type.problem(with: initial, at: "initial") {
                    throw DefinitionError(
                        "\(label): \(problem), as `state` declares it; change `initial` or the declaration",
                        at: ["initial"])
                }
                return type
            }
        }

        // A table declaring each action (mutation, effect) and its fields.
        func schema(_ key: String, _ kind: String) throws -> Schema? {
            try attempt(nil) {
                let t = try type(key)
                guard t == "table" else {
                    throw DefinitionError(
                        "\(label): field '\(key)' must be a table declaring each \(kind) and its fields, e.g. { query = { text = \"string\" } } (got \(t))",
                        at: [key])
                }
                let declaration = try value(key)
                return try DeclarationCache.schema(kind: kind, declaration: declaration) {
                    let found = Schema.read(kind: kind, declaration: declaration).problems
                    guard found.isEmpty else {
                        throw DefinitionError(
                            problems: found.map { .init(message: "\(label): \($0.message)", path: [key] + $0.path) })
                    }
                    return try Schema(kind: kind, declaration: declaration)
                }
            }
        }
        switch kind {
        case .interactor:
            let requests = try attempt([]) { () throws -> [String] in
                guard try type("requests") == "table" else {
                    throw DefinitionError(
                        "\(label): field 'requests' must be a table of request handlers (got \(try type("requests")))",
                        at: ["requests"])
                }
                return try functionTable("requests")
            }
            _ = try attempt([]) { try functionTable("services") }
            return try finish(requests: requests)
        case .compose:
            try attempt(()) {
                guard try type("children") == "table" else {
                    throw DefinitionError(
                        "\(label): field 'children' must be a table of child names to plugins or features",
                        at: ["children"])
                }
            }
            try attempt(()) { try requireFunction("route") }
            try attempt(()) { try requireFunction("combine") }
            _ = try attempt(false) { try optionalFunction("mapEffect") }
            _ = try attempt(false) { try optionalFunction("react") }
            _ = try attempt([]) { try functionTable("invariants") }
            // Optional here, in the form a feature declares them: checked before `route`.
            let actions = try type("actions") == "nil" ? nil : try schema("actions", "action")
            return try finish(declaredState: try readState(initial: .nil), actions: actions)
        case .feature:
            let empty = try Schema(kind: "action", declaration: .table(LuaTable()))
            let initial: LuaValue = try attempt(.nil) {
                let initial: LuaValue
                do { initial = try value("initial") } catch let e as LuaError {
                    throw DefinitionError(
                        "\(label): field 'initial' cannot be state: \(e.description)", at: ["initial"])
                }
                guard case .table = initial else {
                    throw DefinitionError(
                        "\(label): field 'initial' must be a table, the first state (got \(initial.typeName))",
                        at: ["initial"])
                }
                return initial
            }
            let declaredState = try readState(initial: initial)
            let actions = try schema("actions", "action")
            // The declared action names, whatever problems their fields have.
            let declaredActions: [String]? = (try? value("actions"))?.tableValue.map { t in
                t.hash.keys.compactMap(\.stringValue).sorted()
            }
            let mutations = try schema("mutations", "mutation")
            let outputs = try type("outputs") == "nil" ? nil : try schema("outputs", "effect")
            try attempt(()) { try requireFunction("handle") }
            try attempt(()) { try requireFunction("reduce") }
            let hasMigrate = try attempt(false) { try optionalFunction("migrate") }
            let effectHandlers = try attempt([]) { try functionTable("effects") }
            _ = try attempt([]) { try functionTable("services") }
            // Checked by `T.explore` after every step (a spec's own are added to them).
            _ = try attempt([]) { try functionTable("invariants") }
            let strategies: [String: FlattenStrategy] = try attempt([:]) {
                var strategies: [String: FlattenStrategy] = [:]
                switch try value("strategy") {
                case .nil: break
                case .table(let t):
                    for (k, v) in t.entries.sorted(by: { LuaValue.keyOrder($0.key, $1.key) }) {
                        let at = ["strategy", k.stringValue ?? ""]
                        guard case .string(let action) = k, case .string(let s) = v,
                            let strategy = FlattenStrategy(name: s.description)
                        else {
                            let hint =
                                v.stringValue.flatMap { FeatureDefinition.closest(to: $0, in: FlattenStrategy.names) }
                                .map { "; did you mean \"\($0)\"?" } ?? ""
                            problems.append(
                                .init(
                                    message:
                                        "\(label): strategy entries are action = \"merge\" | \"latest\" | \"concat\" | \"exhaust\" (got [\(k)] = \(v))\(hint)",
                                    path: at))
                            continue
                        }
                        // Against the names `actions` declares, even when their fields have problems.
                        if let declared = declaredActions, !declared.contains(action.description) {
                            let hint =
                                FeatureDefinition.closest(to: action.description, in: declared).map {
                                    "did you mean '\($0)'? "
                                } ?? ""
                            problems.append(
                                .init(
                                    message:
                                        "\(label): strategy names undeclared action '\(action)'; \(hint)declared actions: \(declared.joined(separator: ", "))",
                                    path: at))
                            continue
                        }
                        strategies[action.description] = strategy
                    }
                case let other:
                    throw DefinitionError(
                        "\(label): field 'strategy' must be a table of action = strategy (got \(other.typeName))",
                        at: ["strategy"])
                }
                return strategies
            }
            return try finish(
                initial: initial, declaredState: declaredState, actions: actions ?? empty, mutations: mutations,
                outputs: outputs,
                strategies: strategies, effectHandlers: effectHandlers, hasMigrate: hasMigrate)
        }
    }

    /// The known field nearest to `key` by edit distance, when it is near enough to be a typo.
    static func closest(to key: String, in known: [String]) -> String? {
        Nearest.name(to: key, in: known.filter { !$0.hasPrefix("__") })
    }
}

extension FeatureDefinition.Kind {
    /// The top-level fields each kind of definition takes (anything else is reported).
    var fields: [String] {
        switch self {
        case .feature:
            [
                "name", "version", "initial", "state", "actions", "mutations", "outputs", "handle", "reduce", "effects",
                "strategy", "services", "interactors", "repositories", "migrate", "invariants", "__moonflow",
            ]
        case .compose:
            [
                "name", "version", "state", "actions", "children", "route", "combine", "mapEffect", "react",
                "invariants", "__moonflow",
            ]
        case .interactor: ["name", "version", "requests", "services", "interactors", "repositories", "__moonflow"]
        }
    }
}

/// A problem with a definition table; the message names the field and the fix.
public struct DefinitionError: Error, Sendable, CustomStringConvertible {
    /// One problem, with the path of the key it is about inside the definition
    /// (`["strategy", "load"]`), so `moonflow check` can point at that key's line.
    public struct Problem: Sendable, Equatable {
        public let message: String
        public let path: [String]
        package init(message: String, path: [String]) { self.message = message; self.path = path }
    }

    /// Every problem found, in the order found.
    public let problems: [Problem]
    /// The problems, one per line.
    public var message: String { problems.map(\.message).joined(separator: "\n") }

    package init(_ message: String, at path: [String] = []) { problems = [Problem(message: message, path: path)] }
    package init(problems: [Problem]) { self.problems = problems }
    public var description: String { message }
}
