import Foundation
import LuaKit
import MoonflowHost
import MoonflowHostTools
import MoonflowLua
import MoonflowRun

/// `moonflow check PATH`: loads and validates a plugin without running it.
package struct PluginCheck: Sendable {
    package let path: String
    package var profile: LuaState.Profile = .trusted
    /// Bounds the plugin's top-level code and each function `check` calls; nil for none.
    package var timeLimitMs: Int64? = 1000
    package var memoryLimitMB: Int? = 512

    package init(path: String) { self.path = path }

    /// What `check` found: problems, which fail it, and luacheck's warnings, which fail it
    /// only under `--strict`.
    package struct Report: Sendable {
        /// Each with its `file:line` when known, in the order found.
        package var problems: [String] = []
        /// `file:line:col: warning: ...`, by file, line and column.
        package var warnings: [String] = []
        /// Why luacheck did not run, when it did not (it is not installed).
        package var lintNote: String?

        /// Whether `check` fails: on any problem; under `--strict` also on a warning, or when
        /// luacheck did not run (a strict check that checked less must not pass).
        package func fails(strict: Bool) -> Bool {
            !problems.isEmpty || (strict && (!warnings.isEmpty || lintNote != nil))
        }
    }

    /// Loads and validates the plugin, then runs luacheck on every file of it.
    package func report() -> Report {
        var resolved: String?
        // Messages carry what the plugin chose (its files' names, its errors' text).
        var report = Report(problems: problems(resolved: &resolved).map { LuaValue.visible($0) })
        guard let resolved else { return report }
        switch PluginLint(sandboxed: profile == .sandboxed).run(PluginLint.files(ofPlugin: resolved)) {
        case .unavailable(let why):
            report.lintNote = why
        case .checked(let findings):
            // A file that does not parse is a problem already when loading it found it so.
            let named = Set(
                findings.map(\.file).filter { file in
                    report.problems.contains { $0.hasPrefix(LuaValue.escaped(file) + ":") }
                })
            report.problems += findings.filter { $0.isError && !named.contains($0.file) }.map(\.text)
            report.warnings = findings.filter { !$0.isError }.map(\.text)
        }
        return report
    }

    /// Every problem found, each with its `file:line` when known; empty when the plugin is fine.
    /// `resolved` gets the plugin's file, when there is one.
    package func problems(resolved: inout String?) -> [String] {
        do {
            let host = try FeatureHost(
                configuration: .init(
                    searchPaths: FeatureRun.searchPaths(for: path), profile: profile,
                    timeLimitMs: timeLimitMs, memoryLimitMB: memoryLimitMB, clock: .virtual))
            host.bridge.locationRoots = []  // the tool names files as they were given
            resolved = try host.resolve(path)
            // The host owns the process here too: a plugin's top level cannot end the check early.
            try HostOwnedProcess.install(in: host.lua, command: "check") { text, _ in
                FileHandle.standardError.write(Data((text + "\n").utf8))
            }
            let (definition, file) = try host.loadDefinition(path)
            var problems: [String] = []
            // Building the feature checks its interactors and environment too; an interactor
            // (used by features through env.interactors) is checked by building its environment.
            do {
                if definition.kind == .interactor {
                    _ = try host.perform { try host.makeEnv(definition) }
                } else {
                    _ = try host.perform { try host.makeFeature(definition, source: file) }
                }
            } catch {
                problems += PluginCheck.describe(error)
            }
            return problems
        } catch {
            return PluginCheck.describe(error)
        }
    }

    /// One line per problem, each starting with `file:line` when known.
    static func describe(_ error: any Error) -> [String] {
        let report = LuaErrorReport.of(error, fallback: nil)
        let location = report.location
        var lines = FlagHints.add(to: report.message).split(separator: "\n").map(String.init)
        // Validation errors raised by mf.feature carry the script's file:line on the first line.
        let place = location ?? lines.first.flatMap { LuaErrorLocation.leading($0) }
        if let place {
            lines = lines.map { $0.contains(place) || LuaErrorLocation.leading($0) != nil ? $0 : "\(place): \($0)" }
        }
        return lines
    }
}
