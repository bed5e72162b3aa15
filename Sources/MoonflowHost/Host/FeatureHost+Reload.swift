import Foundation
import LuaKit
import MoonflowLua

/// Live reload: swapping a feature's code while it runs (MoonflowHostTools' `reload` and
/// `restart` say what it keeps).
extension FeatureHost {
    /// Loads `feature`'s plugin again and swaps it in (MoonflowHostTools' `reload` and
    /// `restart`, and a dev server's saves).
    package func swapCode(
        of feature: RunningFeature, changed: [String]?, since: Date, restarting: Bool
    ) throws -> ReloadReport {
        do {
            return try swapCodeNow(of: feature, changed: changed, since: since, restarting: restarting)
        } catch {
            let failure = bridge.relative(FeatureError(stage: .reload, wrapping: error, fallback: feature.source))
            if reportsReloadFailures {
                perform { (feature as? any BridgedFeature)?.report(outside: failure, stage: .reload) }
            }
            throw failure
        }
    }

    private func swapCodeNow(
        of feature: RunningFeature, changed: [String]?, since: Date, restarting: Bool
    ) throws -> ReloadReport {
        try perform {
            let file = feature.source
            guard pluginFileExists(file) else {
                throw HostError("\(file) is gone; restore it (the old code keeps running)")
            }
            let saved = try dropPluginModules()
            let envs = sandbox?.takeEnvs()
            let plan: ReloadPlan
            do {
                let (definition, _) = try loadDefinition(file)
                plan = try makePlan(for: feature, definition: definition, file: file, restarting: restarting)
            } catch {
                try? restorePluginModules(saved)
                if let envs { sandbox?.restoreEnvs(envs) }
                throw error
            }
            var migrations: [ReloadReport.Migration] = []
            var changes = ReloadChanges()
            try apply(plan, migrations: &migrations, changes: &changes, restarting: restarting)
            changes.restarted = restarting
            let files = changed ?? [(file as NSString).lastPathComponent]
            let report = ReloadReport(
                files: files, migrations: migrations, ms: Date().timeIntervalSince(since) * 1000, changes: changes)
            feature.outlet.send(.reload(files: report.files, ms: report.ms, changes: changes))
            return report
        }
    }

    /// Every Lua file the running plugins were loaded from: each feature's
    /// file and every module in `package.loaded` found on `package.path`.
    package func loadedFiles(of feature: RunningFeature) throws -> [String] {
        try perform {
            var files = Set(sourceFiles(of: feature))
            let chunk = try lua.load(string: FeatureHost.loadedFilesSource, name: "moonflow.files")
            let found = try lua.call(chunk, []) { try $0.value(1) }
            for case .string(let f) in found.tableValue?.array ?? [] { files.insert(f.description) }
            return files.sorted()
        }
    }

    /// The files `feature` and its children (under `mf.compose`) were loaded from.
    func sourceFiles(of feature: RunningFeature) -> [String] {
        if let composite = feature as? LuaComposite {
            return [composite.source] + composite.children.flatMap { sourceFiles(of: $0.feature) }
        }
        return [feature.source]
    }

    // MARK: - Plan, then apply

    private indirect enum ReloadPlan {
        case feature(
            LuaFeature, LuaFeature.Binding, [RequestInteractor], migrated: LuaValue?, ReloadReport.Migration?,
            ReloadChanges)
        case composite(LuaComposite, FeatureDefinition, [(String, Child)])

        enum Child {
            case kept(ReloadPlan)
            case added(RunningFeature)
        }
    }

    /// Builds everything the swap needs, changing nothing that runs.
    private func makePlan(
        for feature: RunningFeature, definition: FeatureDefinition, file: String, restarting: Bool
    ) throws -> ReloadPlan {
        let outer = pluginSource
        pluginSource = file
        defer { pluginSource = outer }
        if let old = feature as? LuaFeature {
            guard definition.kind == .feature else {
                throw HostError(
                    "\(file) now defines an mf.\(definition.kind.rawValue), not an mf.feature; restart the run to switch kinds (the old code keeps running)"
                )
            }
            let (env, interactors) = try makeEnv(definition)
            var migrated: LuaValue?
            var migration: ReloadReport.Migration?
            var changes = ReloadChanges()
            let oldVersion = old.definition.version
            if restarting {
                migrated = definition.initial
            } else if definition.version == oldVersion {
                let (filled, added) = StateShape.filling(old.state, from: definition.initial)
                if !added.isEmpty { migrated = filled }
                changes.added = added
                changes.stale = StateShape.leftOver(
                    filled, from: definition.initial, declared: definition.declaredState)
            } else {
                guard definition.hasMigrate else {
                    throw HostError(
                        "\(file): version changed from \(oldVersion) to \(definition.version) but the feature has no migrate(old, fromVersion); add one that returns the new state, or keep version = \(oldVersion) (the old code keeps running)"
                    )
                }
                migrated = try migrate(old.state, from: oldVersion, with: definition, file: file)
                migration = .init(feature: definition.name, fromVersion: oldVersion, toVersion: definition.version)
            }
            // The state the new code starts from must fit its declaration, as every later reduce must.
            if let declared = definition.declaredState,
                let problem = declared.problem(with: migrated ?? old.state, at: "state")
            {
                let fix =
                    migration == nil
                    ? "change the declaration to fit, or raise `version` and add a migrate(old, fromVersion) that returns a state that fits"
                    : "make migrate return a state that fits"
                throw HostError(
                    "\(file): the state the new code would start from does not fit its `state` declaration: \(problem); \(fix) (the old code keeps running)"
                )
            }
            return .feature(
                old, LuaFeature.Binding(definition: definition, env: env), interactors, migrated: migrated, migration,
                changes)
        }
        guard let old = feature as? LuaComposite else { throw HostError("\(file): this feature cannot be reloaded") }
        guard definition.kind == .compose else {
            throw HostError(
                "\(file) now defines an mf.\(definition.kind.rawValue), not an mf.compose; restart the run to switch kinds (the old code keeps running)"
            )
        }
        let children = try childDefinitions(definition, source: file).map {
            name, def, childFile -> (String, ReloadPlan.Child) in
            if let existing = old.children.first(where: { $0.name == name })?.feature {
                return (
                    name, .kept(try makePlan(for: existing, definition: def, file: childFile, restarting: restarting))
                )
            }
            return (name, .added(try makeFeature(def, source: childFile)))
        }
        return .composite(old, definition, children)
    }

    /// Runs the new `migrate` on a copy of the state; the result must be plain data.
    private func migrate(
        _ state: LuaValue, from version: Int64, with definition: FeatureDefinition, file: String
    ) throws -> LuaValue {
        do {
            return try lua.call(
                bridge.dispatch.migrate, [.ref(definition.table), .value(state), .value(.integer(version))]
            ) { slots in
                guard slots.isTable(1) else {
                    throw HostError(
                        "\(file): migrate must return the new state table (got \(slots.typeName(1))) (the old code keeps running)"
                    )
                }
                return try slots.value(1, path: "migrated state")
            }
        } catch let e as LuaError {
            if case .conversion(let path, let reason) = e {
                throw HostError(
                    "\(file): migrate returned a state that is not plain data: \(path): \(reason) (the old code keeps running)"
                )
            }
            throw e
        }
    }

    private func apply(
        _ plan: ReloadPlan, migrations: inout [ReloadReport.Migration], changes: inout ReloadChanges, restarting: Bool
    ) throws {
        switch plan {
        case .feature(let feature, let binding, let interactors, let migrated, let migration, let shape):
            let (kept, cancelled) = try feature.rebind(binding, migrated: migrated, cancellingAll: restarting)
            attachLogs(of: interactors, to: feature)
            if let migration { migrations.append(migration) }
            changes.merge(ReloadChanges(added: shape.added, stale: shape.stale, kept: kept, cancelled: cancelled))
        case .composite(let composite, let definition, let children):
            var running: [(String, RunningFeature)] = []
            for (name, child) in children {
                switch child {
                case .kept(let childPlan):
                    var childChanges = ReloadChanges()
                    try apply(childPlan, migrations: &migrations, changes: &childChanges, restarting: restarting)
                    changes.merge(childChanges, under: name)
                    running.append((name, composite.children.first { $0.name == name }!.feature))
                case .added(let feature):
                    running.append((name, feature))
                }
            }
            // A child the new code no longer has would otherwise keep its
            // timers and streams running with nowhere to send their results.
            let dropped = composite.children.filter { old in !running.contains { $0.0 == old.name } }
            try composite.rebind(definition: definition, children: running)
            for child in dropped {
                changes.cancelled += child.feature.inFlight.map { flight in
                    "\(child.name).\(flight.child.map { "\($0)." } ?? "")\(flight.action["type"]?.stringValue ?? "?") #\(flight.actionID)"
                }
                child.feature.dispose()
            }
            for (name, feature) in running where composite.children.contains(where: { $0.name == name }) {
                if case .added = children.first(where: { $0.0 == name })!.1 { feature.start() }
            }
        }
    }

    // MARK: - Modules

    /// Takes the modules of every plugin in the search paths (`NAME.x`) out of
    /// `package.loaded`; returns them so that a failed reload can put them back.
    private func dropPluginModules() throws -> LuaRef {
        try lua.call(try lua.load(string: FeatureHost.reloadSource, name: "moonflow.reload"), [pluginNameSet()]) {
            try $0.ref(1)
        }
    }

    private func restorePluginModules(_ saved: LuaRef) throws {
        try lua.call(
            try lua.load(string: FeatureHost.reloadSource, name: "moonflow.reload"), [pluginNameSet(), .ref(saved)]
        ) { _ in () }
    }

    /// `Lua/reload.lua`: takes the plugins' modules out of `package.loaded`, or puts them back.
    private static let reloadSource = String(decoding: PackageResources.reload_lua, as: UTF8.self)
    /// `Lua/loaded_files.lua`: the files of the modules required so far.
    private static let loadedFilesSource = String(decoding: PackageResources.loaded_files_lua, as: UTF8.self)

    /// `pluginNames()` as a Lua set.
    private func pluginNameSet() -> LuaPush {
        var set = LuaTable()
        for name in pluginNames() { set[name] = true }
        return .value(.table(set))
    }

    /// Folders with an `init.lua` in the search paths, and the plugins the sources hold.
    private func pluginNames() -> [String] {
        let fm = FileManager.default
        return configuration.searchPaths.flatMap { dir in
            ((try? fm.contentsOfDirectory(atPath: dir)) ?? []).filter {
                fm.fileExists(
                    atPath: ((dir as NSString).appendingPathComponent($0) as NSString).appendingPathComponent(
                        "init.lua"))
            }
        } + sources.flatMap { $0.pluginNames() }
    }
}
