import CLuaShim

extension LuaState {
    /// Starts counting the lines of file chunks (`@name`) run in this state and in the
    /// coroutines made from now on (`moonflow test --coverage`): a line hook in C, beside
    /// the watchdog's stop hook, which puts it back when it lets go. Without it no hook is set.
    /// - Returns: false when the counts cannot be allocated.
    @discardableResult
    package func startCoverage() -> Bool {
        guard mf_cover_start(L) != 0 else { return false }
        mf_rest_hook(L)
        return true
    }

    /// Starts counting the lines of file chunks run for the first time from now on (guided
    /// exploration's new lines), with coverage's hook; line counts go on as they were.
    /// - Returns: false when the counts cannot be allocated.
    @discardableResult
    package func startFreshLines() -> Bool {
        guard mf_cover_fresh_start(L) != 0 else { return false }
        mf_rest_hook(L)
        return true
    }

    /// How many lines ran for the first time since the last call (or `startFreshLines`).
    package func takeFreshLines() -> Int { Int(mf_cover_fresh_take(L)) }

    /// The lines run so far, by chunk name (without '@'): each line's count. On the state's
    /// thread, between calls.
    package func coveredLines() -> [String: [Int: Int]] {
        var out: [String: [Int: Int]] = [:]
        let count = mf_cover_count(L)
        for i in 0..<count {
            var hits: UnsafePointer<UInt32>?
            var lines: Int32 = 0
            guard let name = mf_cover_file_at(L, i, &hits, &lines) else { break }
            var counts: [Int: Int] = [:]
            if let hits {
                for line in 0..<Int(lines) where hits[line] > 0 { counts[line] = Int(hits[line]) }
            }
            out[String(cString: name), default: [:]].merge(counts, uniquingKeysWith: +)
        }
        return out
    }
}
