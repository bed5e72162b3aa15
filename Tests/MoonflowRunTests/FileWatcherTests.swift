import Foundation
import MoonflowRun
import XCTest

/// `--watch`'s file watcher, through the platform's own watch and through the
/// portable polling one a platform without a native watch gets: each way an
/// editor saves is reported once, and only Lua files count.
final class FileWatcherTests: XCTestCase {
    private var folder = ""

    override func setUpWithError() throws {
        folder = NSTemporaryDirectory() + "watch-\(UUID().uuidString)/plugin"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try "return 1".write(toFile: folder + "/init.lua", atomically: false, encoding: .utf8)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: (folder as NSString).deletingLastPathComponent)
    }

    /// Every report the watcher made, read from any thread.
    private final class Reports: @unchecked Sendable {
        private let lock = NSLock()
        private var paths: [[String]] = []
        func add(_ changed: [String]) { lock.withLock { paths.append(changed) } }
        var all: [[String]] { lock.withLock { paths } }
        /// Waits up to `seconds` for a report naming `path`.
        func wait(for path: String, seconds: Double = 5) -> Bool {
            let end = Date().addingTimeInterval(seconds)
            while Date() < end {
                if all.contains(where: { $0.contains(path) }) { return true }
                Thread.sleep(forTimeInterval: 0.01)
            }
            return false
        }
    }

    private func watching(_ changes: any FileChanges, files: [String] = [], _ body: (Reports) throws -> Void) throws {
        let reports = Reports()
        let watcher = FileWatcher(folders: [folder], files: files, changes: changes) { changed, _ in
            reports.add(changed)
        }
        try watcher.start()
        defer { watcher.stop() }
        // A polling watch compares against what it saw at start: let a change land after that.
        Thread.sleep(forTimeInterval: 0.05)
        try body(reports)
    }

    private func eachWay(_ body: (any FileChanges) throws -> Void) rethrows {
        try body(FileWatcher.nativeChanges())
        try body(PollingFileChanges(interval: 0.05))
    }

    func testASaveInPlaceIsReportedAndOtherFilesAreNot() throws {
        try eachWay { changes in
            try watching(changes) { reports in
                try "x = 1".write(toFile: folder + "/notes.txt", atomically: false, encoding: .utf8)
                try "x = 1".write(toFile: folder + "/.init.lua.swp", atomically: false, encoding: .utf8)
                try "return 2".write(toFile: folder + "/init.lua", atomically: false, encoding: .utf8)
                XCTAssertTrue(reports.wait(for: folder + "/init.lua"), "\(changes)")
                Thread.sleep(forTimeInterval: 0.3)
                // One burst, unless the machine is so loaded that the write and the close came apart.
                XCTAssertEqual(Set(reports.all.flatMap { $0 }), [folder + "/init.lua"], "\(changes)")
            }
        }
    }

    func testAFileRenamedOverTheOldOneIsReported() throws {
        try eachWay { changes in
            try watching(changes) { reports in
                // What vim and JetBrains editors do: write a temporary file, rename it over.
                try "return 3".write(toFile: folder + "/init.lua", atomically: true, encoding: .utf8)
                XCTAssertTrue(reports.wait(for: folder + "/init.lua"), "\(changes)")
            }
        }
    }

    func testAFileInANewSubfolderIsReported() throws {
        try eachWay { changes in
            try watching(changes) { reports in
                try FileManager.default.createDirectory(atPath: folder + "/lib", withIntermediateDirectories: true)
                try "return {}".write(toFile: folder + "/lib/util.lua", atomically: false, encoding: .utf8)
                XCTAssertTrue(reports.wait(for: folder + "/lib/util.lua"), "\(changes)")
                try FileManager.default.removeItem(atPath: folder + "/lib")
            }
        }
    }

    func testALooseFileOutsideTheFolderIsWatchedThroughItsFolder() throws {
        let outside = (folder as NSString).deletingLastPathComponent + "/shared.lua"
        try "return {}".write(toFile: outside, atomically: false, encoding: .utf8)
        try eachWay { changes in
            try watching(changes, files: [outside]) { reports in
                try "return { 1 }".write(toFile: outside, atomically: false, encoding: .utf8)
                XCTAssertTrue(reports.wait(for: outside), "\(changes)")
            }
        }
    }

    func testWhereANativeWatchExistsItIsUsed() {
        let watcher = FileWatcher(folders: [folder], files: []) { _, _ in }
        #if os(Linux)
        XCTAssertFalse(watcher.polls)
        #else
        XCTAssertTrue(watcher.polls)
        #endif
    }
    #if canImport(Glibc)
    /// A watch stopped while its thread still waits, and a new one started at once (as a run
    /// does when it rebuilds a stuck feature): the new watch gets the save. The old wait used
    /// to poll the closed descriptor's number, which the new watch had been given, and read
    /// the new watch's events itself (a save a rebuilt `--watch` run then never reloaded).
    func testANewWatchStartedAsTheOldOneStopsGetsTheSave() throws {
        let roots: FileWatcher.Roots = { [folder] in ([folder], []) }
        let old = InotifyFileChanges()
        try old.start(roots: roots)
        let oldWaitEnded = DispatchSemaphore(value: 0)
        let oldSaw = ResultBox()
        Thread.detachNewThread {
            oldSaw.set(old.next(timeoutMs: 300))
            oldWaitEnded.signal()
        }
        Thread.sleep(forTimeInterval: 0.05)  // the old wait is polling
        old.stop()
        let new = InotifyFileChanges()
        try new.start(roots: roots)
        defer { new.stop() }
        try "return 2".write(toFile: folder + "/init.lua", atomically: false, encoding: .utf8)
        XCTAssertEqual(oldWaitEnded.wait(timeout: .now() + 5), .success)
        var seen: [String] = []
        let end = Date().addingTimeInterval(5)
        while Date() < end, !seen.contains(folder + "/init.lua") { seen += new.next(timeoutMs: 100) }
        XCTAssertTrue(seen.contains(folder + "/init.lua"), "the new watch saw \(seen)")
        XCTAssertEqual(oldSaw.value, [], "a stopped watch reports nothing (it read the new watch's events)")
    }

    private final class ResultBox: @unchecked Sendable {
        private let lock = NSLock()
        private var paths: [String] = []
        func set(_ value: [String]) { lock.withLock { paths = value } }
        var value: [String] { lock.withLock { paths } }
    }
    #endif
}
