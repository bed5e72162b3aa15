#if canImport(Glibc)
import Foundation
import Glibc
import MoonflowHost
import LuaKit
import MoonflowLua

/// Changes seen through Linux's inotify. Folders are watched, not files, so
/// every way editors save shows: writing in place, writing a temporary file
/// and renaming it over (vim, JetBrains), deleting and creating again. Each
/// root folder's subfolders are watched too (new ones as they appear), and so
/// is the folder that holds it, so a root deleted and made again is watched
/// anew; loose files are watched through their folder.
package final class InotifyFileChanges: FileChanges, @unchecked Sendable {
    private static let mask = UInt32(
        IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_MODIFY | IN_ATTRIB)

    private let lock = NSLock()
    private var fd: Int32 = -1
    /// A `next` is waiting on `fd`: `stop` leaves the closing to it. Closed at once, the
    /// number could be reused by the next watch's inotify (a rebuilt feature's) while this
    /// wait still polls and reads it, and this watch would swallow that one's events (a
    /// save the new watch never reloads).
    private var polling = false
    private var stopped = false
    private var roots: FileWatcher.Roots?
    private var watches: [Int32: String] = [:]
    private var buffer = [UInt8](repeating: 0, count: 64 * 1024)

    package init() {}

    package func start(roots: @escaping FileWatcher.Roots) throws {
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else {
            throw HostError("cannot watch files: inotify_init1 failed (\(String(cString: strerror(errno))))")
        }
        lock.withLock {
            self.fd = fd
            self.roots = roots
        }
        try addWatches()
    }

    package func rootsChanged() { try? addWatches() }

    package func stop() {
        lock.withLock {
            stopped = true
            if !polling { closeLocked() }
        }
    }

    private func closeLocked() {
        if fd >= 0 { close(fd); fd = -1 }
    }

    package func next(timeoutMs: Int) -> [String] {
        let fd = lock.withLock { () -> Int32 in
            if stopped || self.fd < 0 { return -1 }
            polling = true
            return self.fd
        }
        guard fd >= 0 else { return [] }
        defer {
            lock.withLock {
                polling = false
                if stopped { closeLocked() }
            }
        }
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&pfd, 1, Int32(clamping: timeoutMs)) > 0 else { return [] }
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard n > 0, !lock.withLock({ stopped }) else { return [] }  // a stopped watch reports nothing
        var changed: [String] = []
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
                _ = lock.withLock { watches.removeValue(forKey: wd) }
                continue
            }
            guard let dir = lock.withLock({ watches[wd] }), !name.isEmpty else { continue }
            let path = (dir as NSString).appendingPathComponent(name)
            if eventMask & UInt32(IN_ISDIR) != 0, eventMask & UInt32(IN_CREATE | IN_MOVED_TO) != 0 {
                try? addWatches()
                // Files written into it before its watch was set count as changed.
                changed += FolderWalk.paths(under: path).map { PathText.join(path, $0) }
                continue
            }
            changed.append(path)
        }
        return changed
    }

    private func addWatches() throws {
        guard let roots = lock.withLock({ self.roots }) else { return }
        let (folders, files) = roots()
        var dirs: [String] = []
        for root in folders {
            dirs.append(PathText.parent(of: root))
            guard FileManager.default.fileExists(atPath: root) else { continue }
            dirs.append(root)
            for sub in FolderWalk.paths(under: root) {
                let full = PathText.join(root, sub)
                var isDir: ObjCBool = false
                if FileManager.default.fileExists(atPath: full, isDirectory: &isDir), isDir.boolValue {
                    dirs.append(full)
                }
            }
        }
        for file in files { dirs.append(PathText.parent(of: file)) }
        try lock.withLock {
            guard fd >= 0 else { return }
            for dir in Set(dirs) where !watches.values.contains(dir) {
                let wd = inotify_add_watch(fd, dir.isEmpty ? "." : dir, Self.mask)
                guard wd >= 0 else {
                    throw HostError(
                        "cannot watch \(dir): \(String(cString: strerror(errno))) (raise fs.inotify.max_user_watches if it says no space)"
                    )
                }
                watches[wd] = dir
            }
        }
    }
}
#endif
