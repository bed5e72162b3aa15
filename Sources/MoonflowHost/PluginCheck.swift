import Foundation
import LuaKit
import MoonflowLua

/// `moonflow check PATH`: loads and validates a plugin without running it.
public struct PluginCheck: Sendable {
    public let path: String
    public var profile: LuaState.Profile = .trusted

    public init(path: String) { self.path = path }

    /// Every problem found, each with its `file:line` when known; empty when the plugin is fine.
    public func problems() -> [String] {
        do {
            let host = try FeatureHost(configuration: .init(searchPaths: FeatureRun.searchPaths(for: path), profile: profile, clock: .virtual))
            let (definition, file) = try host.loadDefinition(path)
            var problems: [String] = []
            // Building the feature checks its interactors and environment too.
            do { _ = try host.perform { try host.makeFeature(definition, source: file) } } catch {
                problems.append(PluginCheck.describe(error))
            }
            return problems
        } catch {
            return [PluginCheck.describe(error)]
        }
    }

    static func describe(_ error: any Error) -> String {
        let (message, location) = FeatureErrors.describe(error, fallback: nil)
        let first = message.components(separatedBy: "\nstack traceback:").first ?? message
        if let location, !first.hasPrefix(location) { return "\(location): \(first)" }
        return first
    }
}
