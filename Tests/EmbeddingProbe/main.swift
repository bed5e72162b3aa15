import Foundation
import MoonflowHost
import MoonflowHostTools

// An app's main, as the embedding tests run it: a main-actor host (`executor: .mainActor`)
// with a text field whose `type` action appends a character. It types "hello, moonflow" one
// character per send, waits for the feature to be idle and prints the field's text.
//   moonflow-embedding-probe sync   a plain main on the main thread, then the run loop
//   moonflow-embedding-probe async  the main actor's tasks after `dispatchMain()`, as a Swift
//                                   `async` main runs them (on Linux, off the main thread once
//                                   the main actor has suspended), loading with `await`
//   moonflow-embedding-probe async-sync-load  the same, loading without `await`
// And what an app must never meet, each under `sync` (a plain main, then the run loop) or
// `async` (the main actor's tasks after `dispatchMain()`):
//   moonflow-embedding-probe flood sync|async   another thread queues 3,000 slow actions while
//       main waits; then main's queue must get a turn before they are all reduced (the UI
//       draws), and the figures say how often it did
//   moonflow-embedding-probe json-while-main-waits sync|async   `send(json:)` from a thread
//       the main thread waits for returns (it must not wait for the main thread in turn)
//   moonflow-embedding-probe typed sync|async   the same burst through a `MainActorHost`, a
//       main-actor observer and a view model: isolated by type, on either kind of main
//   moonflow-embedding-probe lifetimes sync|async   the app lets its MainActorHost go: the
//       feature keeps it (a Swift service still answers); then another thread disposes the
//       feature while actions flow, and the view model and `state` agree
//   moonflow-embedding-probe load-off-main sync|async   a synchronous `load` from a thread
//       main waits for throws, saying to await it (it used to wait for main: a deadlock)
//   moonflow-embedding-probe state-while-observer-waits sync|async   on a queue host, main
//       reads `state` while an observer on the host's queue waits for main

let plugin = """
    local mf = require "moonflow"
    return mf.feature {
      name = "field",
      initial = { text = "" },
      actions = { type = { ch = "string" }, echo = { text = "string" } },
      mutations = { typed = { text = "string" } },
      handle = function(action, state, env)
        if action.type == "echo" then
          -- a Swift service's answer: it needs the host, which the app may have let go
          return env.services.echo(action.text):map(function(t) return { type = "typed", text = t } end)
        end
        return { type = "typed", text = state.text .. action.ch }
      end,
      reduce = function(state, m) state.text = m.text return state end,
    }
    """
let typed = "hello, moonflow"

/// A feature whose every action costs some work in Lua (a sum over 2,000 numbers).
let busyPlugin = """
    local mf = require "moonflow"
    return mf.feature {
      name = "busy",
      initial = { done = 0 },
      actions = { work = { n = "integer" } },
      mutations = { worked = { sum = "integer" } },
      handle = function(action)
        local sum = 0
        for i = 1, 2000 do sum = sum + i * action.n end
        return { type = "worked", sum = sum }
      end,
      reduce = function(state, m) state.done = state.done + 1 return state end,
    }
    """

func folder() throws -> String {
    let dir = NSTemporaryDirectory() + "moonflow-probe-\(getpid())"
    try FileManager.default.createDirectory(atPath: dir + "/field", withIntermediateDirectories: true)
    try plugin.write(toFile: dir + "/field/init.lua", atomically: true, encoding: .utf8)
    try FileManager.default.createDirectory(atPath: dir + "/busy", withIntermediateDirectories: true)
    try busyPlugin.write(toFile: dir + "/busy/init.lua", atomically: true, encoding: .utf8)
    return dir
}

func finish(_ text: LuaValue?) -> Never {
    print("text: \(text?.stringValue ?? "nil")")
    exit(text?.stringValue == typed ? 0 : 1)
}

final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set() { lock.withLock { value = true } }
    var isSet: Bool { lock.withLock { value } }
}

/// Calls `body` each turn of the main queue until it returns true (or 30 s pass: a failure).
@MainActor
func whenTrue(_ what: String, _ body: @escaping @MainActor () -> Bool, then: @escaping @MainActor () -> Void) {
    let deadline = Date().addingTimeInterval(30)
    func check() {
        if body() { return then() }
        guard Date() < deadline else { print("timed out waiting until \(what)"); exit(1) }
        DispatchQueue.main.asyncAfter(deadline: .now() + .milliseconds(2)) { MainActor.assumeIsolated { check() } }
    }
    check()
}

/// Another thread queues slow actions while main waits; main's queue must get a turn before
/// they are all reduced. Prints how many were reduced when it did, and the frames a 60 Hz
/// timer on the main queue drew during the drain.
@MainActor
func flood() throws {
    let host = try FeatureHost(configuration: .init(searchPaths: [try folder()], executor: .mainActor))
    let busy = try host.load("busy")
    let count = 3000
    let sent = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
        for n in 1...count { try? busy.send(["type": "work", "n": .integer(Int64(n))]) }
        sent.signal()
    }
    // Main waits: every action is queued before the main queue runs any of them.
    sent.wait()
    let start = DispatchTime.now()
    var frames = 0
    var longestGap: UInt64 = 0
    var lastFrame = start.uptimeNanoseconds
    let timer = DispatchSource.makeTimerSource(queue: .main)
    timer.schedule(deadline: .now(), repeating: .milliseconds(16))
    timer.setEventHandler {
        let now = DispatchTime.now().uptimeNanoseconds
        frames += 1
        longestGap = max(longestGap, now - lastFrame)
        lastFrame = now
    }
    timer.resume()
    var reducedAtFirstTurn = -1
    DispatchQueue.main.async {
        MainActor.assumeIsolated { reducedAtFirstTurn = Int(busy.state["done"]?.intValue ?? -1) }
    }
    whenTrue("the flood is reduced", { busy.isIdle && reducedAtFirstTurn >= 0 }) {
        timer.cancel()
        let ms = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e6
        let done = Int(busy.state["done"]?.intValue ?? -1)
        print("main queue's first turn: \(reducedAtFirstTurn) of \(count) reduced")
        print(
            String(
                format: "frames: %d in %.0f ms of draining (%.0f per second), longest gap %.0f ms", frames, ms,
                Double(frames) / ms * 1000, Double(longestGap) / 1e6))
        print("reduced: \(done)")
        exit(reducedAtFirstTurn < count && done == count ? 0 : 1)
    }
}

/// `send(json:)` from a thread main waits for: it returns, and the action is reduced.
@MainActor
func jsonWhileMainWaits() throws {
    let host = try FeatureHost(configuration: .init(searchPaths: [try folder()], executor: .mainActor))
    let field = try host.load("field")
    let returned = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
        do { try field.send(json: #"{"type":"type","ch":"hello, moonflow"}"#) } catch { print("error: \(error)") }
        returned.signal()
    }
    guard returned.wait(timeout: .now() + 20) == .success else {
        print("deadlock: send(json:) waited for the main thread, which waited for it")
        exit(1)
    }
    whenTrue("the field is idle", { field.isIdle }) { finish(field.state["text"]) }
}

/// A queue host whose observer waits for main (`DispatchQueue.main.sync`) while main reads
/// `state`: the read returns (the state as of the last drain's end) and nothing deadlocks.
@MainActor
func stateWhileObserverWaits() throws {
    let host = try FeatureHost(configuration: .init(searchPaths: [try folder()], executor: .queue))
    let field = try host.load("field")
    let observerWaits = Flag()
    let token = field.observe(kinds: [.mutation]) { _ in
        observerWaits.set()
        DispatchQueue.main.sync {}
    }
    for ch in typed { try field.send(["type": "type", "ch": LuaValue(String(ch))]) }
    while !observerWaits.isSet { usleep(100) }
    let read = DispatchSemaphore(value: 0)
    // Watched from another thread: a read that never returns cannot say so itself.
    Thread.detachNewThread {
        if read.wait(timeout: .now() + 20) == .timedOut {
            print("deadlock: reading state waited for the host's queue, whose observer waited for main")
            exit(1)
        }
    }
    _ = field.state
    read.signal()
    whenTrue("the field is idle", { field.isIdle }) {
        token.cancel()
        finish(field.state["text"])
    }
}

struct FieldView: Decodable, Sendable { let text: String }

/// The typed burst through `MainActorHost`: `send`, `observe` and the view model on the main actor.
@MainActor
func typedBurst() throws {
    let host = try MainActorHost(configuration: .init(searchPaths: [try folder()]))
    let field = try host.load("field")
    var seen = 0
    let token = field.observe(kinds: .state) { _ in seen += 1 }  // main-actor state, no lock
    let model = try field.model(as: FieldView.self, actions: LuaValue.self)
    field.start()
    for ch in typed {
        try field.send(["type": "type", "ch": LuaValue(String(ch))])
        // On the main actor, `send` has reduced when it returns: the view reads it at once.
        guard model.view.text.last == ch else { print("the view lagged: \(model.view.text)"); exit(1) }
    }
    whenTrue("the field is idle", { field.feature.isIdle }) {
        token.cancel()
        print("states observed: \(seen)")
        finish(LuaValue(model.view.text))
    }
}

/// Lifetimes as documented: the host goes, the feature keeps it; dispose mid-flow, view = state.
@MainActor
func lifetimes() throws {
    var host: MainActorHost? = try MainActorHost(configuration: .init(searchPaths: [try folder()]))
    host?.host.register(service: "echo") { args in args.first ?? .nil }
    guard let field = try host?.load("field") else { exit(1) }
    let model = try field.model(as: FieldView.self, actions: LuaValue.self)
    field.start()
    host = nil  // the app lets the host go: the feature keeps what it uses
    model.send(["type": "echo", "text": "kept"])
    whenTrue("the service answered", { model.view.text == "kept" || model.lastError != nil }) {
        if let error = model.lastError { print("the service failed once the host was let go: \(error)"); exit(1) }
        print("the service answered after the host was let go")
        let feature = field.feature
        Thread.detachNewThread {
            for n in 0..<2000 {
                try? feature.send(["type": "type", "ch": "x"])
                if n == 200 { feature.dispose() }
            }
        }
        whenTrue("the feature is disposed and idle", { field.feature.isDisposed && field.feature.isIdle }) {
            // Whatever the disposed feature still had to deliver comes within a few turns.
            DispatchQueue.main.asyncAfter(deadline: .now() + .milliseconds(200)) {
                MainActor.assumeIsolated {
                    let state = field.state["text"]?.stringValue ?? "?"
                    print("view \(model.view.text.count) characters, state \(state.count)")
                    print(model.view.text == state ? "the view and the state agree" : "the view and the state differ")
                    exit(model.view.text == state ? 0 : 1)
                }
            }
        }
    }
}

/// A synchronous `load` on a main-actor host from a thread main waits for: it throws at once.
@MainActor
func loadOffMain() throws {
    let host = try FeatureHost(configuration: .init(searchPaths: [try folder()], executor: .mainActor))
    let returned = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
        do { _ = try host.load("field"); print("loaded off the main actor") } catch { print("refused: \(error)") }
        returned.signal()
    }
    guard returned.wait(timeout: .now() + 20) == .success else {
        print("deadlock: load waited for the main thread, which waited for it")
        exit(1)
    }
    exit(0)
}

/// Runs `body` on the main actor under the kind of main `kind` names, then serves the main queue.
func onMain(_ kind: String?, _ body: @escaping @MainActor () throws -> Void) -> Never {
    let run: @MainActor () -> Void = {
        do { try body() } catch { print("error: \(error)"); exit(1) }
    }
    switch kind {
    case "sync":
        MainActor.assumeIsolated { run() }
        while true { RunLoop.main.run(until: Date().addingTimeInterval(1)) }
    case "async":
        Task { @MainActor in
            // Off the main thread from here on (Linux): the main actor resumes wherever the main queue runs.
            try? await Task.sleep(nanoseconds: 1_000_000)
            run()
        }
        dispatchMain()
    default:
        FileHandle.standardError.write(Data("usage: moonflow-embedding-probe SCENARIO sync|async\n".utf8))
        exit(2)
    }
}

switch CommandLine.arguments.dropFirst().first {
case "flood": onMain(CommandLine.arguments.dropFirst(2).first, flood)
case "json-while-main-waits": onMain(CommandLine.arguments.dropFirst(2).first, jsonWhileMainWaits)
case "typed": onMain(CommandLine.arguments.dropFirst(2).first, typedBurst)
case "lifetimes": onMain(CommandLine.arguments.dropFirst(2).first, lifetimes)
case "load-off-main": onMain(CommandLine.arguments.dropFirst(2).first, loadOffMain)
case "state-while-observer-waits": onMain(CommandLine.arguments.dropFirst(2).first, stateWhileObserverWaits)
case "sync":
    let host = try FeatureHost(configuration: .init(searchPaths: [try folder()], executor: .mainActor))
    let field = try host.load("field")
    for ch in typed { try field.send(["type": "type", "ch": LuaValue(String(ch))]) }
    let deadline = Date().addingTimeInterval(20)
    while !field.isIdle, Date() < deadline { RunLoop.main.run(until: Date().addingTimeInterval(0.01)) }
    finish(field.state["text"])
case "async", "async-sync-load":
    let awaitsLoad = CommandLine.arguments[1] == "async"
    Task { @MainActor in
        do {
            let host = try FeatureHost(configuration: .init(searchPaths: [try folder()], executor: .mainActor))
            // Off the main thread from here on: the main actor resumes wherever the main queue runs.
            try await Task.sleep(nanoseconds: 1_000_000)
            // In a synchronous closure the synchronous `load` is the one called.
            let loadNow: () throws -> RunningFeature = { try host.load("field") }
            let field = awaitsLoad ? try await host.load("field") : try loadNow()
            for ch in typed { try field.send(["type": "type", "ch": LuaValue(String(ch))]) }
            try await field.idle()
            finish(field.state["text"])
        } catch {
            print("error: \(error)")
            exit(1)
        }
    }
    dispatchMain()
default:
    FileHandle.standardError.write(Data("usage: moonflow-embedding-probe sync|async|async-sync-load\n".utf8))
    exit(2)
}
