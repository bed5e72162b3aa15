import Foundation

/// The Lua files a run loads, as they were when it started: going back runs the code again from
/// its load (`DebugTravel`), which is this run only while those files are unchanged. An edit
/// saved meanwhile would make the re-run count other lines and stop at another point, with
/// values the run never had, so the debugger refuses instead and names the file.
///
///     let sources = LoadedSources(for: ["plugins/counter"])
///     sources.changed()   // nil, or "plugins/counter/init.lua changed"
package struct LoadedSources: Sendable {
    /// Each `.lua` file found, by path, with a hash of its bytes.
    private let files: [String: Int]
    private let roots: [String]

    /// The most `.lua` files kept, and the most entries of any kind walked: a run of a folder
    /// that holds a whole tree stays quick to check.
    static let maxFiles = 10_000
    static let maxEntries = 100_000

    /// Looks at the `.lua` files a run of `paths` loads: for each path, the plugin folder it is
    /// in (the nearest folder up from it that holds an `init.lua`; the path itself when there
    /// is none), and `./plugins`, where plugins are found by name.
    package init(for paths: [String]) {
        var roots = paths.map(Self.pluginFolder(of:))
        var isFolder: ObjCBool = false
        if FileManager.default.fileExists(atPath: "plugins", isDirectory: &isFolder), isFolder.boolValue {
            roots.append("plugins")
        }
        self.roots = Array(Set(roots)).sorted()
        files = Self.scan(self.roots)
    }

    /// What changed since the run started: the first file (by path) edited, added or removed,
    /// in words; nil when none did.
    package func changed() -> String? {
        let now = Self.scan(roots)
        for path in Set(files.keys).union(now.keys).sorted() where files[path] != now[path] {
            switch (files[path], now[path]) {
            case (nil, _): return "\(path) was added"
            case (_, nil): return "\(path) was removed"
            default: return "\(path) changed"
            }
        }
        return nil
    }

    /// The nearest folder from `path` up (itself included) that holds an `init.lua`; `path`
    /// itself when no folder up to the filesystem's root does.
    static func pluginFolder(of path: String) -> String {
        var url = URL(fileURLWithPath: path).standardizedFileURL
        while url.path != "/" {
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("init.lua").path) { return url.path }
            url.deleteLastPathComponent()
        }
        return URL(fileURLWithPath: path).standardizedFileURL.path
    }

    /// Every `.lua` file under `roots` (or a root that is one), with a hash of its bytes.
    private static func scan(_ roots: [String]) -> [String: Int] {
        var found: [String: Int] = [:]
        func add(_ path: String) {
            guard found.count < maxFiles, let bytes = FileManager.default.contents(atPath: path) else { return }
            var hasher = Hasher()
            hasher.combine(bytes)
            found[path] = hasher.finalize()
        }
        for root in roots {
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: root, isDirectory: &isFolder) else { continue }
            guard isFolder.boolValue else {
                if root.hasSuffix(".lua") { add(root) }
                continue
            }
            let base = URL(fileURLWithPath: root).standardizedFileURL
            guard
                let walk = FileManager.default.enumerator(
                    at: base, includingPropertiesForKeys: nil, options: [.skipsHiddenFiles])
            else { continue }
            var walked = 0
            for case let url as URL in walk {
                walked += 1
                if walked > maxEntries || found.count >= maxFiles { break }
                if url.pathExtension == "lua" { add(url.standardizedFileURL.path) }
            }
        }
        return found
    }
}
