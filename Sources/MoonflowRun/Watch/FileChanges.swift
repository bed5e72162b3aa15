import Foundation
import MoonflowHost
import LuaKit
import MoonflowLua

/// Where a `FileWatcher` learns that files changed: the one seam between the
/// watcher and the operating system. `InotifyFileChanges` serves Linux;
/// `PollingFileChanges` serves every platform (a port adds one file with a
/// type of its own, FSEvents on Darwin, say, and `FileWatcher.nativeChanges`
/// picks it).
package protocol FileChanges: AnyObject, Sendable {
    /// Starts looking at `roots` (called once, before `next`).
    /// - Throws: when the platform cannot watch (too many watches, say).
    func start(roots: @escaping FileWatcher.Roots) throws
    /// Waits up to `timeoutMs` for changes and returns the paths that changed
    /// (any file: the watcher decides which count); empty on a timeout.
    func next(timeoutMs: Int) -> [String]
    /// Looks at the roots again (files were added to them).
    func rootsChanged()
    /// Ends the watch; a `next` under way returns soon.
    func stop()
}

/// Changes found by comparing each file's modification time and size every
/// `interval`: slower to notice than a native watch, and portable.
package final class PollingFileChanges: FileChanges, @unchecked Sendable {
    private let interval: TimeInterval
    private let lock = NSLock()
    private var roots: FileWatcher.Roots?
    private var last: [String: String] = [:]
    private var nextPoll = Date.distantPast
    private var stopped = false

    package init(interval: TimeInterval = 0.25) { self.interval = interval }

    package func start(roots: @escaping FileWatcher.Roots) throws {
        let seen = Self.stamps(roots())
        lock.withLock {
            self.roots = roots
            last = seen
            nextPoll = Date().addingTimeInterval(interval)
        }
    }

    package func next(timeoutMs: Int) -> [String] {
        let (due, roots) = lock.withLock { (nextPoll, self.roots) }
        let wait = min(Double(timeoutMs) / 1000, due.timeIntervalSinceNow)
        if wait > 0 { Thread.sleep(forTimeInterval: wait) }
        guard let roots, Date() >= due, !lock.withLock({ stopped }) else { return [] }
        let now = Self.stamps(roots())
        return lock.withLock {
            let changed = Set(now.keys).union(last.keys).filter { now[$0] != last[$0] }
            last = now
            nextPoll = Date().addingTimeInterval(interval)
            return changed.sorted()
        }
    }

    package func rootsChanged() {}

    package func stop() { lock.withLock { stopped = true } }

    /// Each file under the roots (folders walked with their subfolders) with its time and size.
    private static func stamps(_ roots: (folders: [String], files: Set<String>)) -> [String: String] {
        var candidates = Array(roots.files)
        for root in roots.folders {
            candidates += FolderWalk.paths(under: root).map { PathText.join(root, $0) }
        }
        var out: [String: String] = [:]
        for path in candidates {
            if let stamp = stamp(of: path) { out[path] = stamp }
        }
        return out
    }

    /// A file's modification time (to the nanosecond the file system keeps) and size; nil for a
    /// folder or a file that is not there. Two writes within one second differ by it.
    package static func stamp(of path: String) -> String? {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
            attributes[.type] as? FileAttributeType != .typeDirectory
        else { return nil }
        let modified = (attributes[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0
        return "\(modified) \(attributes[.size] ?? "")"
    }
}
