import Foundation
import LuaKit
import MoonflowEvents
import MoonflowHost
import MoonflowHostTools
import MoonflowLua

/// `moonflow run --watch`: reload on every save, as the prompt's `:reload` does, with the
/// state kept; and the hot restart (`:restart`, the inspector's `restart`). The run then
/// goes on until a signal ends it (FeatureRun+Signals.swift).
extension FeatureRun {
    /// The plugin's folder (for `plugins/NAME/init.lua`) or the lone file.
    var pluginFolder: String? {
        guard let source = feature?.source, PathText.normalized(source).split(separator: "/").last == "init.lua" else {
            return nil
        }
        return PathText.parent(of: source)
    }

    func startWatching() throws {
        let folder = pluginFolder
        let files = try host.loadedFiles(of: feature)
        let watcher = FileWatcher(folders: folder.map { [$0] } ?? [], files: files) { [weak self] changed, noticed in
            self?.reloadSaved(changed: changed, noticed: noticed)
        }
        try watcher.start()
        self.watcher = watcher
        if watcher.polls {
            emit(
                .log(message: "watching by polling every 250 ms (no native file watch on this platform)", location: nil)
            )
        }
    }

    /// A save seen by the watcher: reloads, and reports a failure only if it
    /// persists. An editor may write a file in several chunks; the first may end
    /// mid-statement (`syntax error near <eof>`). So after a failure the files
    /// get a moment: if they changed meanwhile, the watcher's next burst reloads
    /// them whole and this failure is dropped.
    ///
    /// A burst whose files are all as they were when last reloaded is passed over: on a busy
    /// machine an editor's write and its close can come apart into two bursts, and the save
    /// is still one reload.
    func reloadSaved(changed: [String], noticed: Date) {
        // A saved spec is not the plugin's code (unless the plugin loads it): no reload.
        let loaded = Set((try? host.loadedFiles(of: feature)) ?? [])
        let changed = changed.filter { !SpecFiles.isSpec($0, in: pluginFolder) || loaded.contains($0) }
        if changed.isEmpty { return }
        func stamps() -> [String: String] {
            Dictionary(
                uniqueKeysWithValues: changed.compactMap { path in PollingFileChanges.stamp(of: path).map { (path, $0) }
                })
        }
        let seen = stamps()
        if !seen.isEmpty, seen.count == changed.count, seen.allSatisfy({ reloadedStamps[$0.key] == $0.value }) {
            return
        }
        guard let failure = attemptReload(changed: changed, noticed: noticed) else {
            reloadedStamps.merge(seen) { $1 }
            return
        }
        let before = stamps()
        Thread.sleep(forTimeInterval: FeatureRun.settleAfterFailedSave)
        let after = stamps()
        if before != after { return }
        emit(failure)
    }

    /// How long a failed reload waits for a file still being written.
    package static let settleAfterFailedSave: TimeInterval = 0.15

    /// Reloads now; a failure is an `error` event and the old code keeps running.
    func reload(changed: [String]?, noticed: Date) {
        if let failure = attemptReload(changed: changed, noticed: noticed) { emit(failure) }
    }

    /// Reloads; returns the `error` event for a failure (the old code keeps running).
    private func attemptReload(changed: [String]?, noticed: Date) -> FeatureEvent? {
        let folder = pluginFolder
        let names = changed?.map { path -> String in
            guard let folder, path.hasPrefix(folder + "/") else { return path }
            return String(path.dropFirst(folder.count + 1))
        }
        if !FileManager.default.fileExists(atPath: feature.source) {
            // Deleted, perhaps to be written again at once: the next save reloads.
            emit(
                .log(
                    message: "\(feature.source) was removed; the old code keeps running until it is back", location: nil
                ))
            return nil
        }
        do {
            try host.reload(feature, changed: names, since: noticed)
            options.reloaded?()
            watcher?.watch(files: try host.loadedFiles(of: feature))
            return nil
        } catch {
            var (message, location) = LuaErrorReport.describe(error, fallback: nil)
            if location == nil, let leading = LuaErrorLocation.leading(message) {
                location = leading
                message = String(message.dropFirst(leading.count + 1)).trimmingWhitespace()
            }
            return .error(message: message, location: location ?? feature.source)
        }
    }

    /// A hot restart (`:restart`, the inspector's `restart`): the code again, the state from `initial`.
    func restart() {
        do {
            try host.restart(feature)
            options.reloaded?()
            watcher?.watch(files: try host.loadedFiles(of: feature))
        } catch {
            let (message, location) = LuaErrorReport.describe(error, fallback: nil)
            emit(.error(message: message, location: location ?? feature.source))
        }
    }
}
