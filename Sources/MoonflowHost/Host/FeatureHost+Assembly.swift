import Foundation
import LuaKit
import MoonflowLua

/// Assembling a feature from its definition: the children of an `mf.compose`, a feature's `env`
/// with its services and its request interactors, and where those interactors' failures go.
extension FeatureHost {
    package func makeFeature(
        _ definition: FeatureDefinition, source: String, initial: LuaValue? = nil
    ) throws -> RunningFeature {
        let outer = pluginSource
        pluginSource = source
        defer { pluginSource = outer }
        switch definition.kind {
        case .feature:
            let (env, interactors) = try makeEnv(definition)
            let start = mergesInitialState ? initial.map { Self.merged($0, over: definition.initial) } : initial
            let feature = try LuaFeature(
                definition: definition, bridge: bridge, env: env, source: source, context: context, initial: start)
            attachLogs(of: interactors, to: feature)
            // Its services, logs and plugin sources are the host's: a live feature keeps it.
            feature.owner = self
            return feature
        case .compose:
            let composite = try LuaComposite(
                definition: definition, bridge: bridge,
                children: try makeChildren(definition, source: source, initial: initial), source: source)
            composite.owner = self
            return composite
        case .interactor:
            throw HostError(
                "\(source) defines an mf.interactor, not a feature: features use it through env.interactors")
        }
    }

    /// `given` over `initial`, one level deep: each top-level field `given` has replaces
    /// `initial`'s (a table whole, not merged), the others stay; a state that is not a table
    /// replaces `initial` whole.
    package static func merged(_ given: LuaValue, over initial: LuaValue) -> LuaValue {
        guard case .table(let fields) = given, case .table(var out) = initial else { return given }
        for (key, value) in fields.entries { out[key] = value }
        return .table(out)
    }

    /// The children of an `mf.compose`: plugin names (found in the search paths) or definitions.
    private func makeChildren(
        _ definition: FeatureDefinition, source: String, initial: LuaValue?
    ) throws -> [(String, RunningFeature)] {
        try childDefinitions(definition, source: source).map { name, def, file in
            (name, try makeFeature(def, source: file, initial: initial?[name]))
        }
    }

    /// The children an `mf.compose` names, in name order: each with its
    /// definition and the file it came from (a plugin's `init.lua`, or the
    /// parent's file for a feature table written there).
    package func childDefinitions(
        _ definition: FeatureDefinition, source: String
    ) throws -> [(String, FeatureDefinition, String)] {
        let entries: [(String, LuaRef?, String?)] = try lua.rawGet(definition.table, "children") { slots in
            var names: [String] = []
            try slots.forEachField(1) { k, _ in names.append(k) }
            return try names.sorted().map { name in
                try slots.field(1, name) { child in
                    if child.isTable(1) { return (name, try child.ref(1), nil) }
                    guard let plugin = try child.value(1, path: "children.\(name)").stringValue else {
                        throw HostError(
                            "\(source): children.\(name) must be a plugin name or a feature table (got \(child.typeName(1)))"
                        )
                    }
                    return (name, nil, plugin)
                }
            }
        }
        guard !entries.isEmpty else { throw HostError("\(source): mf.compose needs at least one child in `children`") }
        return try entries.map { name, table, plugin in
            if let table {
                let def = try lua.call(bridge.dispatch.identity, [.ref(table)]) {
                    try FeatureDefinition.read($0, 1, kind: nil)
                }
                return (name, def, source)
            }
            let (def, file) = try loadDefinition(plugin!)
            return (name, def, file)
        }
    }

    /// An interactor's failures are `.log` events of the feature using it (and go to `log`).
    func attachLogs(of interactors: [RequestInteractor], to feature: LuaFeature) {
        for interactor in interactors {
            interactor.log = { [weak feature, weak self] message, location in
                feature?.log(message, location: location)
                self?.log(message, location)
            }
        }
    }

    /// A feature's (or an interactor's) `env`, and the request interactors made for it: those it
    /// names and theirs, each before the one that uses it.
    package func makeEnv(_ definition: FeatureDefinition) throws -> (env: LuaRef, interactors: [RequestInteractor]) {
        let (interactors, made) = try interactorsTable(definition)
        let overrides: LuaPush = serviceOverrides.map { .ref($0) } ?? .value(.nil)
        let env = try lua.call(
            bridge.dispatch.makeEnv,
            [
                .ref(definition.table), .ref(try servicesTable(for: definition)), .ref(interactors),
                bridge.serviceResult(definition), overrides, .function(lateService),
                envOverrides.map { .ref($0) } ?? .value(.nil),
            ]
        ) { try $0.ref(1) }
        return (env, made)
    }

    /// `env.interactors`: the definition's `interactors = { name = mf.interactor{...} | "plugin" }`,
    /// and every request interactor made for it (those the interactors use included).
    func interactorsTable(_ definition: FeatureDefinition) throws -> (table: LuaRef, made: [RequestInteractor]) {
        var fields: [(String, LuaPush)] = []
        var made: [RequestInteractor] = []
        let entries: [(String, LuaRef?)] = try lua.rawGet(definition.table, "interactors") { slots in
            guard slots.isTable(1) else { return [] }
            var names: [String] = []
            try slots.forEachField(1) { k, _ in names.append(k) }
            return try names.sorted().map { name in
                try slots.field(1, name) { ($0.isTable(1) ? (name, try $0.ref(1)) : (name, nil)) }
            }
        }
        for (name, table) in entries {
            let def: FeatureDefinition
            var source = pluginSource
            if let table {
                def = try lua.call(bridge.dispatch.identity, [.ref(table)]) {
                    try FeatureDefinition.read($0, 1, kind: .interactor)
                }
            } else {
                let pluginName: String = try lua.rawGet(definition.table, "interactors") {
                    try $0.field(1, name) { try $0.string(1) }
                }
                (def, source) = try loadDefinition(pluginName)
                guard def.kind == .interactor else {
                    throw HostError("interactors.\(name): plugin '\(pluginName)' is not an mf.interactor")
                }
            }
            let interactor = RequestInteractor(definition: def, bridge: bridge)
            let outer = pluginSource
            pluginSource = source
            defer { pluginSource = outer }
            let (env, nested) = try makeEnv(def)
            interactor.env = env
            interactor.log = { [weak self] message, location in self?.log(message, location) }
            made += nested
            made.append(interactor)
            fields.append((name, .object(interactor, interactorClass)))
        }
        return (try lua.makeTable(fields), made)
    }
}
