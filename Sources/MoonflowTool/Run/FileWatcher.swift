import Foundation
import MoonflowHost
#if canImport(Glibc)
import Glibc
#endif

/// Watches a plugin's Lua files and reports each burst of changes once.
///
///     let watcher = FileWatcher(folders: ["plugins/counter"], files: []) { changed, noticed in
///         print("changed:", changed)      // ["plugins/counter/init.lua"]
///     }
///     try watcher.start()
///
/// On Linux it uses inotify on folders, not files, so every way editors save
/// is seen: writing in place, writing a temporary file and renaming it over
/// (vim, JetBrains), deleting and creating again. Folders are watched with
/// their subfolders (new ones too); `files` outside them are watched through
/// their folder. Only `.lua` files count (editor swap and backup files do
/// not). Events that come within `quietMs` of each other make one report.
/// Elsewhere it polls modification times every 250 ms.
package final class FileWatcher: @unchecked Sendable {
    /// Called on the watcher's thread with the changed files (sorted) and when the first change was noticed.
    package typealias Handler = @Sendable (_ changed: [String], _ noticed: Date) -> Void

    private let lock = NSLock()
    private var folders: [String]
    private var files: Set<String>
    private let handler: Handler
    /// Quiet time that ends a burst.
    package var quietMs = 8
    private var stopped = false
    private var thread: Thread?
    #if canImport(Glibc)
    private var fd: Int32 = -1
    private var watches: [Int32: String] = [:]
    private let watchLock = NSLock()
    #endif

    /// Whether changes are seen through inotify (Linux) rather than by polling.
    package static var usesInotify: Bool {
        #if canImport(Glibc)
        true
        #else
        false
        #endif
    }

    package init(folders: [String], files: [String], handler: @escaping Handler) {
        self.folders = folders
        self.files = Set(files)
        self.handler = handler
    }

    deinit { stop() }

    /// Starts watching on a thread of its own.
    /// - Throws: when inotify cannot be set up (too many watches, say).
    package func start() throws {
        #if canImport(Glibc)
        fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { throw HostError("cannot watch files: inotify_init1 failed (\(String(cString: strerror(errno))))") }
        try addWatches()
        let t = Thread { [weak self] in self?.runInotify() }
        #else
        let t = Thread { [weak self] in self?.runPolling() }
        #endif
        t.name = "moonflow.watch"
        thread = t
        t.start()
    }

    /// Also watches `files` (modules a reload loaded from elsewhere).
    package func watch(files more: [String]) {
        lock.withLock { files.formUnion(more) }
        #if canImport(Glibc)
        try? addWatches()
        #endif
    }

    package func stop() {
        lock.withLock { stopped = true }
        #if canImport(Glibc)
        if fd >= 0 { close(fd); fd = -1 }
        #endif
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

    #if canImport(Glibc)
    private static let mask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_MODIFY | IN_ATTRIB)

    private func addWatches() throws {
        var dirs: [String] = []
        let (roots, loose) = lock.withLock { (folders, files) }
        for root in roots {
            // The folder that holds it too: when the plugin folder is deleted and made
            // again, its creation shows there and the new folder is watched anew.
            let parent = (root as NSString).deletingLastPathComponent
            dirs.append(parent.isEmpty ? "." : parent)
            guard FileManager.default.fileExists(atPath: root) else { continue }
            dirs.append(root)
            let found = FileManager.default.enumerator(atPath: root)?.allObjects as? [String] ?? []
            for sub in found {
                let full = (root as NSString).appendingPathComponent(sub)
                var isDir: ObjCBool = false
                if FileManager.default.fileExists(atPath: full, isDirectory: &isDir), isDir.boolValue { dirs.append(full) }
            }
        }
        for file in loose { dirs.append((file as NSString).deletingLastPathComponent) }
        try watchLock.withLock {
            for dir in Set(dirs) where !watches.values.contains(dir) {
                let wd = inotify_add_watch(fd, dir.isEmpty ? "." : dir, FileWatcher.mask)
                guard wd >= 0 else {
                    throw HostError("cannot watch \(dir): \(String(cString: strerror(errno))) (raise fs.inotify.max_user_watches if it says no space)")
                }
                watches[wd] = dir
            }
        }
    }

    private func runInotify() {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var changed = Set<String>()
        var noticed: Date?
        var lastEvent = Date()
        while !isStopped {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let timeout: Int32 = noticed == nil ? 200 : Int32(quietMs)
            let ready = poll(&pfd, 1, timeout)
            if isStopped { return }
            if ready > 0 {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n > 0 {
                    var offset = 0
                    while offset + MemoryLayout<inotify_event>.size <= n {
                        let (wd, eventMask, length, name) = buffer.withUnsafeBytes { raw -> (Int32, UInt32, Int, String) in
                            let event = raw.load(fromByteOffset: offset, as: inotify_event.self)
                            let nameStart = offset + MemoryLayout<inotify_event>.size
                            let bytes = raw[nameStart..<min(nameStart + Int(event.len), n)].prefix { $0 != 0 }
                            return (event.wd, event.mask, Int(event.len), String(decoding: bytes, as: UTF8.self))
                        }
                        offset += MemoryLayout<inotify_event>.size + length
                        if eventMask & UInt32(IN_IGNORED) != 0 {
                            // The folder went away: forget its watch, so it is watched again if it comes back.
                            _ = watchLock.withLock { watches.removeValue(forKey: wd) }
                            continue
                        }
                        guard let dir = watchLock.withLock({ watches[wd] }), !name.isEmpty else { continue }
                        let path = (dir as NSString).appendingPathComponent(name)
                        if eventMask & UInt32(IN_ISDIR) != 0, eventMask & UInt32(IN_CREATE | IN_MOVED_TO) != 0 {
                            try? addWatches()
                            // Files written into it before its watch was set count as changed.
                            let found = FileManager.default.enumerator(atPath: path)?.allObjects as? [String] ?? []
                            for file in found.map({ (path as NSString).appendingPathComponent($0) }) where counts(file) {
                                if noticed == nil { noticed = Date() }
                                changed.insert(file)
                                lastEvent = Date()
                            }
                            continue
                        }
                        if counts(path) {
                            if noticed == nil { noticed = Date() }
                            changed.insert(path)
                            lastEvent = Date()
                        }
                    }
                }
            }
            if let first = noticed, Date().timeIntervalSince(lastEvent) * 1000 >= Double(quietMs) {
                let paths = changed.sorted()
                changed = []
                noticed = nil
                handler(paths, first)
            }
        }
    }
    #endif

    private func runPolling() {
        func stamps() -> [String: Date] {
            var out: [String: Date] = [:]
            let (roots, loose) = lock.withLock { (folders, files) }
            var candidates = Array(loose)
            for root in roots {
                let found = FileManager.default.enumerator(atPath: root)?.allObjects as? [String] ?? []
                candidates += found.map { (root as NSString).appendingPathComponent($0) }
            }
            for path in candidates where counts(path) {
                out[path] = (try? FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date) ?? .distantPast
            }
            return out
        }
        var last = stamps()
        while !isStopped {
            Thread.sleep(forTimeInterval: 0.25)
            let now = stamps()
            let changed = Set(now.keys).union(last.keys).filter { now[$0] != last[$0] }
            last = now
            if !changed.isEmpty { handler(changed.sorted(), Date()) }
        }
    }
}
