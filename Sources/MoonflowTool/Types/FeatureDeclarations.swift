import Foundation
import LuaKit
import MoonflowHost
import MoonflowHostTools
import MoonflowLua
import MoonflowRun

/// What one feature declares, as `moonflow types` reads it: its state, actions, mutations
/// and outward effects. A plugin gives one of these for itself and one for each child of
/// an `mf.compose`, depth first.
package struct FeatureDeclarations: Sendable {
    package enum Kind: String, Sendable { case feature, compose }

    package let name: String
    package let kind: Kind
    /// The declared `state`, or the one inferred from `initial` (see `stateIsInferred`).
    package let state: SchemaType
    /// True when the feature declares no `state` and `state` is what `initial` suggests.
    package let stateIsInferred: Bool
    /// Declared actions and mutations by name, each with its fields (a compose's mutations are
    /// empty, and its actions too unless it declares them).
    package let actions: [String: [String: Schema.Field]]
    package let mutations: [String: [String: Schema.Field]]
    /// Declared outward effects, or nil when the feature declares no `outputs`.
    package let outputs: [String: [String: Schema.Field]]?
    /// The file the definition came from.
    package let file: String
    /// The order its source writes each declaration's keys in (read from `file`).
    package let order: DeclarationOrder

    package init(
        name: String, kind: Kind, state: SchemaType, stateIsInferred: Bool,
        actions: [String: [String: Schema.Field]] = [:], mutations: [String: [String: Schema.Field]] = [:],
        outputs: [String: [String: Schema.Field]]? = nil, file: String = "", order: DeclarationOrder? = nil
    ) {
        self.name = name; self.kind = kind; self.state = state; self.stateIsInferred = stateIsInferred
        self.actions = actions; self.mutations = mutations; self.outputs = outputs; self.file = file
        self.order = order ?? (file.isEmpty ? DeclarationOrder() : DeclarationOrder.read(file: file, feature: name))
    }

    /// A usage problem: the plugin cannot be read, or is not a feature.
    package struct LoadError: Error, CustomStringConvertible, Sendable {
        package let description: String
    }

    /// Loads the plugin at `path` (a folder with `init.lua` or a `.lua` file) and reads its
    /// declarations without running `handle`, `reduce` or any stream: only the files' top level.
    ///
    /// - Returns: the plugin's own declarations first, then its children's (for a compose).
    /// - Throws: `LoadError` with the problem and its fix.
    package static func load(_ path: String) throws -> [FeatureDeclarations] {
        do {
            let host = try FeatureHost(
                configuration: .init(
                    searchPaths: FeatureRun.searchPaths(for: path),
                    timeLimitMs: 1000, memoryLimitMB: 512, clock: .virtual))
            host.bridge.locationRoots = []
            let (definition, file) = try host.loadDefinition(path)
            var found: [FeatureDeclarations] = []
            var seen: Set<String> = []
            func add(_ definition: FeatureDefinition, file given: String) throws {
                // A child written in another file (`require "user.posts"`) comes with its parent's
                // file; where its functions are defined names its own (unless Lua shortened it).
                let at = (definition.locations["handle"] ?? definition.locations["route"])
                    .map { String($0[..<($0.lastIndex(of: ":") ?? $0.endIndex)]) }
                let file = found.isEmpty ? given : at.flatMap { $0.hasPrefix("...") ? nil : $0 } ?? given
                switch definition.kind {
                case .interactor:
                    throw LoadError(
                        description:
                            "\(file) is an mf.interactor, which has no state or actions to type; give a plugin that returns mf.feature or mf.compose"
                    )
                case .feature:
                    guard seen.insert(definition.name).inserted else { return }
                    found.append(
                        FeatureDeclarations(
                            name: definition.name, kind: .feature, state: definition.stateType,
                            stateIsInferred: definition.declaredState == nil,
                            actions: definition.actions.shapes, mutations: definition.mutations.shapes,
                            outputs: definition.outputs?.shapes, file: file))
                case .compose:
                    guard seen.insert(definition.name).inserted else { return }
                    // Its declared actions (optional for a compose) get an enum as a feature's do.
                    found.append(
                        FeatureDeclarations(
                            name: definition.name, kind: .compose, state: definition.declaredState ?? .scalar(.table),
                            stateIsInferred: definition.declaredState == nil,
                            actions: definition.declaresActions ? definition.actions.shapes : [:], file: file))
                    let children = try host.perform { try host.childDefinitions(definition, source: file) }
                    for (_, child, childFile) in children { try add(child, file: childFile) }
                }
            }
            try add(definition, file: file)
            return found
        } catch let error as LoadError {
            throw error
        } catch {
            throw LoadError(description: PluginCheck.describe(error).joined(separator: "\n"))
        }
    }
}
