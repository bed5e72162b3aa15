import Foundation
import LuaKit
import MoonflowRun

/// Pushes each burst of saves, by `--watch`'s rules: only the files the burst changed are
/// read and compiled again; a burst that changed nothing is passed over, and a changed file
/// that does not compile gets a moment (an editor may still be writing it) before those files
/// are read again and pushed as they are then (a real mistake goes to the apps, which keep
/// their old code and report it).
final class Pusher: @unchecked Sendable {
    private let server: DevServer
    private let lua: LuaState?

    init(server: DevServer) {
        self.server = server
        lua = try? LuaState()
    }

    /// Called on the watcher's thread, one burst at a time, with the files it changed (paths
    /// under the served folders, as the watcher gives them).
    func saved(_ paths: [String]) {
        guard let keys = keys(of: paths) else {
            // A path outside every plugin's folder (a folder given twice over, say): all again.
            server.publish(DevServer.files(of: server.plugins))
            return
        }
        let now = texts(of: keys)
        if let lua,
            now.contains(where: { key, text in text.map { (try? lua.load(string: $0, name: key)) == nil } ?? false })
        {
            Thread.sleep(forTimeInterval: FeatureRun.settleAfterFailedSave)
            server.publish(updating: texts(of: keys))
            return
        }
        server.publish(updating: now)
    }

    /// Each path as the server names it (`counter/init.lua`), or nil when one lies in no plugin's folder.
    private func keys(of paths: [String]) -> [String]? {
        var keys: [String] = []
        for path in paths {
            guard
                let plugin = server.plugins.first(where: {
                    path.hasPrefix($0.folder.hasSuffix("/") ? $0.folder : $0.folder + "/")
                })
            else { return nil }
            let folder = plugin.folder.hasSuffix("/") ? plugin.folder : plugin.folder + "/"
            keys.append(plugin.name + "/" + path.dropFirst(folder.count))
        }
        return keys
    }

    /// The text of each file now; nil for one that is gone (or no longer served).
    private func texts(of keys: [String]) -> [String: String?] {
        var out: [String: String?] = [:]
        for key in keys {
            if case .success(let text) = server.file(key) { out[key] = .some(text) } else { out[key] = .some(nil) }
        }
        return out
    }
}
