import Foundation
import MoonflowHost
import LuaKit
import MoonflowLua

/// Watches a plugin's Lua files and reports each burst of changes once.
///
///     let watcher = FileWatcher(folders: ["plugins/counter"], files: []) { changed, noticed in
///         print("changed:", changed)      // ["plugins/counter/init.lua"]
///     }
///     try watcher.start()
///
/// Folders are watched with their subfolders (new ones too); `files` outside
/// them are watched through their folder. Only `.lua` files count (editor swap
/// and backup files do not). Changes that come within `quietMs` of each other
/// make one report. What the operating system offers is behind `FileChanges`:
/// inotify on Linux, polling every 250 ms elsewhere.
package final class FileWatcher: @unchecked Sendable {
    /// Called on the watcher's thread with the changed files (sorted) and when the first change was noticed.
    package typealias Handler = @Sendable (_ changed: [String], _ noticed: Date) -> Void
    /// The folders and loose files being watched, as they are now.
    package typealias Roots = @Sendable () -> (folders: [String], files: Set<String>)

    private let lock = NSLock()
    private var folders: [String]
    private var files: Set<String>
    private let handler: Handler
    private let changes: any FileChanges
    /// Quiet time that ends a burst.
    package var quietMs = 8
    private var stopped = false
    private var thread: Thread?

    /// The platform's own way to see changes: inotify on Linux, polling elsewhere.
    package static func nativeChanges() -> any FileChanges {
        #if canImport(Glibc)
        InotifyFileChanges()
        #else
        PollingFileChanges()
        #endif
    }

    /// - Parameter changes: where changes come from (default: `nativeChanges()`).
    package init(folders: [String], files: [String], changes: (any FileChanges)? = nil, handler: @escaping Handler) {
        self.folders = folders
        self.files = Set(files)
        self.changes = changes ?? Self.nativeChanges()
        self.handler = handler
    }

    deinit { stop() }

    /// Whether changes are noticed by polling (no native watch on this platform, or asked for).
    package var polls: Bool { changes is PollingFileChanges }

    /// Starts watching on a thread of its own.
    /// - Throws: when the platform cannot watch (too many inotify watches, say).
    package func start() throws {
        try changes.start(roots: { [weak self] in
            guard let self else { return ([], []) }
            return self.lock.withLock { (self.folders, self.files) }
        })
        let t = Thread { [weak self] in self?.run() }
        t.name = "moonflow.watch"
        thread = t
        t.start()
    }

    /// Also watches `files` (modules a reload loaded from elsewhere).
    package func watch(files more: [String]) {
        lock.withLock { files.formUnion(more) }
        changes.rootsChanged()
    }

    package func stop() {
        lock.withLock { stopped = true }
        changes.stop()
    }

    private var isStopped: Bool { lock.withLock { stopped } }

    /// Whether a change to `path` counts: a `.lua` file in a watched folder, or a watched file.
    private func counts(_ path: String) -> Bool {
        let name = (path as NSString).lastPathComponent
        guard name.hasSuffix(".lua"), !name.hasPrefix(".") else { return false }
        return lock.withLock {
            files.contains(path) || folders.contains { path.hasPrefix($0.hasSuffix("/") ? $0 : $0 + "/") }
        }
    }

    /// Gathers changes into bursts: a burst ends once nothing has changed for `quietMs`.
    private func run() {
        var changed = Set<String>()
        var noticed: Date?
        var lastChange = Date()
        while !isStopped {
            let seen = changes.next(timeoutMs: noticed == nil ? 200 : quietMs)
            if isStopped { return }
            for path in seen where counts(path) {
                if noticed == nil { noticed = Date() }
                changed.insert(path)
                lastChange = Date()
            }
            if let first = noticed, Date().timeIntervalSince(lastChange) * 1000 >= Double(quietMs) {
                let paths = changed.sorted()
                changed = []
                noticed = nil
                handler(paths, first)
            }
        }
    }
}
