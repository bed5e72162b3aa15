import LuaKit
import Streams

/// A validated `mf.feature{...}` (or `mf.compose`, `mf.interactor`) table: the
/// data parts copied into Swift, the functions left in Lua and looked up by
/// name at dispatch time (so a reload swaps them all at once).
public struct FeatureDefinition: @unchecked Sendable {
    public enum Kind: String, Sendable { case feature, compose, interactor }

    public let kind: Kind
    public let name: String
    /// State shape version (hot reload migrates when it changes).
    public let version: Int64
    public let initial: LuaValue
    public let actions: Schema
    public let mutations: Schema
    /// Flatten strategy per action name (merge when absent).
    public let strategies: [String: FlattenStrategy]
    /// Effect types with an internal handler.
    public let effectHandlers: Set<String>
    /// Request names of an `mf.interactor`.
    public let requests: [String]
    public let hasMigrate: Bool
    /// The definition table in Lua.
    public let table: LuaRef

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
        if let expected { kind = expected }
        else if let marked { kind = marked }
        else if try type("children") == "table" { kind = .compose }
        else if try type("requests") == "table" { kind = .interactor }
        else { kind = .feature }
        let what = "mf.\(kind.rawValue)"

        guard case .string(let name) = try value("name"), !name.bytes.isEmpty else {
            throw DefinitionError("\(what): field 'name' must be a non-empty string (got \(try type("name")))")
        }
        var version: Int64 = 1
        switch try value("version") {
        case .nil: break
        case .integer(let v): version = v
        default: throw DefinitionError("\(what) '\(name)': field 'version' must be an integer (got \(try type("version")))")
        }
        func requireFunction(_ key: String) throws {
            let t = try type(key)
            guard t == "function" else { throw DefinitionError("\(what) '\(name)': field '\(key)' must be a function (got \(t))") }
        }
        func optionalFunction(_ key: String) throws -> Bool {
            let t = try type(key)
            if t == "nil" { return false }
            guard t == "function" else { throw DefinitionError("\(what) '\(name)': field '\(key)' must be a function when given (got \(t))") }
            return true
        }
        func functionTable(_ key: String) throws -> [String] {
            try field(key) { s in
                if s.isNil(1) { return [] }
                guard s.isTable(1) else { throw DefinitionError("\(what) '\(name)': field '\(key)' must be a table of functions (got \(s.typeName(1)))") }
                var names: [String] = []
                try s.forEachField(1) { k, valueType in
                    guard valueType == "function" else {
                        throw DefinitionError("\(what) '\(name)': \(key).\(k) must be a function (got \(valueType))")
                    }
                    names.append(k)
                }
                return names.sorted()
            }
        }

        switch kind {
        case .interactor:
            let requests = try functionTable("requests")
            guard try type("requests") == "table" else {
                throw DefinitionError("\(what) '\(name)': field 'requests' must be a table of request handlers (got \(try type("requests")))")
            }
            return FeatureDefinition(kind: kind, name: name.description, version: version, initial: .nil,
                                     actions: try Schema(kind: "action", declaration: .table(LuaTable())),
                                     mutations: try Schema(kind: "mutation", declaration: .table(LuaTable())),
                                     strategies: [:], effectHandlers: [], requests: requests, hasMigrate: false,
                                     table: try slots.ref(i))
        case .compose:
            guard try type("children") == "table" else {
                throw DefinitionError("\(what) '\(name)': field 'children' must be a table of child names to plugins or features")
            }
            try requireFunction("route")
            try requireFunction("combine")
            _ = try optionalFunction("mapEffect")
            return FeatureDefinition(kind: kind, name: name.description, version: version, initial: .nil,
                                     actions: try Schema(kind: "action", declaration: .table(LuaTable())),
                                     mutations: try Schema(kind: "mutation", declaration: .table(LuaTable())),
                                     strategies: [:], effectHandlers: [], requests: [], hasMigrate: false,
                                     table: try slots.ref(i))
        case .feature:
            // Every independent problem is collected, so `moonflow check` lists them all.
            var problems: [String] = []
            func attempt<R>(_ fallback: R, _ body: () throws -> R) throws -> R {
                do { return try body() } catch let e as DefinitionError {
                    problems.append(e.message)
                    return fallback
                }
            }
            let empty = try Schema(kind: "action", declaration: .table(LuaTable()))
            let initial: LuaValue = try attempt(.nil) {
                let initial: LuaValue
                do { initial = try value("initial") } catch let e as LuaError {
                    throw DefinitionError("\(what) '\(name)': field 'initial' cannot be state: \(e.description)")
                }
                guard case .table = initial else {
                    throw DefinitionError("\(what) '\(name)': field 'initial' must be a table, the first state (got \(initial.typeName))")
                }
                return initial
            }
            func schema(_ key: String, _ kind: String) throws -> Schema {
                try attempt(empty) {
                    let t = try type(key)
                    guard t == "table" else {
                        throw DefinitionError("\(what) '\(name)': field '\(key)' must be a table declaring each \(kind) and its fields, e.g. { query = { text = \"string\" } } (got \(t))")
                    }
                    do { return try Schema(kind: kind, declaration: try value(key)) } catch let e as SchemaError {
                        throw DefinitionError("\(what) '\(name)': \(e.message)")
                    }
                }
            }
            let actions = try schema("actions", "action")
            let mutations = try schema("mutations", "mutation")
            try attempt(()) { try requireFunction("handle") }
            try attempt(()) { try requireFunction("reduce") }
            let hasMigrate = try attempt(false) { try optionalFunction("migrate") }
            let effectHandlers = try attempt([]) { try functionTable("effects") }
            _ = try attempt([]) { try functionTable("services") }
            let strategies: [String: FlattenStrategy] = try attempt([:]) {
                var strategies: [String: FlattenStrategy] = [:]
                switch try value("strategy") {
                case .nil: break
                case .table(let t):
                    for (k, v) in t.entries {
                        guard case .string(let action) = k, case .string(let s) = v, let strategy = FlattenStrategy(name: s.description) else {
                            throw DefinitionError("\(what) '\(name)': strategy entries are action = \"merge\" | \"latest\" | \"concat\" | \"exhaust\" (got [\(k)] = \(v))")
                        }
                        guard actions.shapes[action.description] != nil else {
                            throw DefinitionError("\(what) '\(name)': strategy names undeclared action '\(action)'")
                        }
                        strategies[action.description] = strategy
                    }
                case let other:
                    throw DefinitionError("\(what) '\(name)': field 'strategy' must be a table of action = strategy (got \(other.typeName))")
                }
                return strategies
            }
            if !problems.isEmpty { throw DefinitionError(problems.joined(separator: "\n")) }
            return FeatureDefinition(kind: kind, name: name.description, version: version, initial: initial,
                                     actions: actions, mutations: mutations, strategies: strategies,
                                     effectHandlers: Set(effectHandlers), requests: [], hasMigrate: hasMigrate,
                                     table: try slots.ref(i))
        }
    }
}

/// A problem with a definition table; the message names the field and the fix.
public struct DefinitionError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
