import Foundation
import LuaKit
import Streams

/// `mf.task(function(t) ... end)`: a coroutine as a stream. `t:emit(v)` sends a
/// value; `local ok, v = t:await(stream)` waits for a stream's first value.
/// The wait yields from Lua code (the `await` method is Lua, see
/// `MoonflowModule`'s prelude), never from a Swift frame: Swift only records
/// what to wait for, then resumes the coroutine when it arrives. Disposing the
/// stream closes the coroutine.
final class LuaTaskRunner: @unchecked Sendable {
    let observer: Observer<LuaValue>
    /// Released once the task is done, and with it the coroutine's registry slot (the runner
    /// itself, a userdata, lives until the state's collector gets to it).
    var coroutine: LuaCoroutine?
    /// Set by `t:_await(stream)` just before the coroutine yields.
    var awaiting: Producer<LuaValue>?
    var waitDisposable: Disposable?
    var running = false
    var cancelled = false
    var done = false
    /// Where the task's function is defined, for errors that have no line of their own.
    let location: String?

    init(observer: Observer<LuaValue>, location: String?) {
        self.observer = observer
        self.location = location
    }

    static func producer(_ bridge: LuaBridge, _ fn: LuaRef, location: String?) -> Producer<LuaValue> {
        // Weak: the stream is a userdata of the state the bridge owns.
        Producer { [weak bridge] observer, lifetime in
            let runner = LuaTaskRunner(observer: observer, location: location)
            let taskClass: LuaClass
            do {
                let live = try bridge.alive()
                runner.coroutine = try live.lua.coroutine(fn)
                taskClass = live.taskClass
            } catch {
                observer.sendFailed(LuaStreamError(error))
                return
            }
            _ = lifetime.observeEnded { runner.cancel() }
            runner.step([.object(runner, taskClass)])
        }
    }

    /// Resumes the coroutine once, then starts whatever it now waits for.
    func step(_ args: [LuaPush]) {
        guard let coroutine, !done, !cancelled else { return }
        running = true
        let outcome: Result<LuaCoroutine.Status, any Error> = Result {
            try coroutine.resume(args) { _ in () }.0
        }
        running = false
        if cancelled { finishCancel(); return }
        switch outcome {
        case .failure(let error):
            done = true
            self.coroutine = nil
            let failure = LuaStreamError(error)
            observer.sendFailed(failure.location == nil ? LuaStreamError(failure.value, location: location) : failure)
        case .success(.finished):
            done = true
            self.coroutine = nil
            observer.sendCompleted()
        case .success(.yielded):
            guard let next = awaiting else {
                done = true
                coroutine.close()
                self.coroutine = nil
                observer.sendFailed(
                    LuaStreamError(
                        "mf.task: the task yielded with coroutine.yield; a task may only wait through t:await(stream)",
                        location: location))
                return
            }
            awaiting = nil
            wait(for: next)
        }
    }

    private func wait(for stream: Producer<LuaValue>) {
        let delivered = Once()
        let serial = SerialDisposable()
        waitDisposable = serial
        serial.inner = stream.take(1).start(
            Observer { [self] event in
                switch event {
                case .value(let v):
                    if delivered.claim() { step([.value(true), .value(v)]) }
                case .failed(let e):
                    if delivered.claim() { step([.value(false), .value(LuaStreamError(e).value)]) }
                case .completed:
                    if delivered.claim() {
                        step([.value(false), .value("the awaited stream completed without a value")])
                    }
                case .interrupted:
                    break
                }
            })
    }

    func cancel() {
        cancelled = true
        waitDisposable?.dispose()
        if !running { finishCancel() }
    }

    private func finishCancel() {
        guard !done else { return }
        done = true
        coroutine?.close()
        coroutine = nil
    }
}

/// `t:emit(v)` and `t:_await(stream)` (the Lua `t:await` wraps the latter and yields).
enum LuaTaskMethods {
    static func table(_ bridge: LuaBridge) -> [String: LuaFunction] {
        [
            "emit": { args in
                guard let runner = args.object(1, as: LuaTaskRunner.self) else { throw args.bad(1, "emit", "task") }
                guard !runner.cancelled, !runner.done else { return [] }
                runner.observer.send(value: try args.value(2))
                return []
            },
            "_await": { [unowned bridge] args in
                guard let runner = args.object(1, as: LuaTaskRunner.self) else { throw args.bad(1, "await", "task") }
                runner.awaiting = try bridge.stream(args, 2, "await")
                return []
            },
        ]
    }
}
