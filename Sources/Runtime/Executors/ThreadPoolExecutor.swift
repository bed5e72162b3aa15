import Foundation

/// An executor with threads of its own, at most `threads` of them: work that blocks (a
/// synchronous network, file or SQLite call) waits there instead of holding one of the few
/// threads of Swift's shared cooperative pool, where every task of the process runs.
///
///     let io = ThreadPoolExecutor(label: "io", threads: 4)
///     let rows = try await io.submit { try database.rows(sql) }   // blocks an io thread only
///
/// **Threading**: any thread. Up to `threads` pieces of work run at once, each on one of the
/// executor's threads, taken in submission order; the rest wait their turn. A thread starts when
/// work finds none free and stays for later work; every thread ends once the executor is
/// released and the work already given to it has run. `perform` waits for a free thread and then
/// runs the work on the calling thread (which it blocks anyway), counted as one of the
/// `threads`; a nested `perform` runs inline.
public final class ThreadPoolExecutor: Executor {
    public let label: String
    private let line: WorkLine

    /// Creates an executor; its threads start when work first needs them.
    ///
    /// - Parameters:
    ///   - label: The threads' name, shown in diagnostics.
    ///   - threads: The most threads it runs (at least 1).
    public init(label: String, threads: Int = 1) {
        self.label = label
        line = WorkLine(label: label, limit: max(1, threads))
    }

    deinit { line.close() }

    public func perform<T>(_ work: () throws -> T) rethrows -> T {
        if isCurrent { return try work() }
        // A thread of the pool is held for the work's duration, so the bound counts it.
        let granted = DispatchSemaphore(value: 0)
        let released = DispatchSemaphore(value: 0)
        line.add {
            granted.signal()
            released.wait()
        }
        granted.wait()
        defer { released.signal() }
        return try ExecutorContext.entering(self, work)
    }

    public func enqueue(_ work: @escaping @Sendable () -> Void) {
        line.add { [self] in ExecutorContext.entering(self, work) }
    }
}

/// The work a `ThreadPoolExecutor` was given and the threads that take it, which outlive the
/// executor until the work runs out.
private final class WorkLine: @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [@Sendable () -> Void] = []
    private var head = 0
    private var threads = 0
    private var idle = 0
    private var closed = false
    private let label: String
    private let limit: Int

    init(label: String, limit: Int) {
        self.label = label
        self.limit = limit
    }

    func add(_ job: @escaping @Sendable () -> Void) {
        condition.lock()
        jobs.append(job)
        // A new thread when more work waits than idle threads will wake for.
        let startsThread = jobs.count - head > idle && threads < limit
        if startsThread { threads += 1 }
        condition.signal()
        condition.unlock()
        if startsThread {
            // Named from inside: on Linux a name given before `start` is not the thread's.
            let thread = Thread { [self] in
                Thread.current.name = label
                run()
            }
            thread.start()
        }
    }

    func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }

    private func run() {
        condition.lock()
        while true {
            while head == jobs.count && !closed {
                idle += 1
                condition.wait()
                idle -= 1
            }
            if head == jobs.count {
                threads -= 1
                condition.unlock()
                return
            }
            let job = jobs[head]
            head += 1
            if head == jobs.count {
                jobs.removeAll(keepingCapacity: true)
                head = 0
            } else if head >= 1024 && head * 2 >= jobs.count {
                // Under work that never lets up: drop what was taken, so the line never grows.
                jobs.removeFirst(head)
                head = 0
            }
            condition.unlock()
            job()
            condition.lock()
        }
    }
}
