import Foundation
import MoonflowHost

// An app's main, as the embedding tests run it: a main-actor host (`executor: .mainActor`)
// with a text field whose `type` action appends a character. It types "hello, moonflow" one
// character per send, waits for the feature to be idle and prints the field's text.
//   moonflow-embedding-probe sync   a plain main on the main thread, then the run loop
//   moonflow-embedding-probe async  the main actor's tasks after `dispatchMain()`, as a Swift
//                                   `async` main runs them (on Linux, off the main thread once
//                                   the main actor has suspended), loading with `await`
//   moonflow-embedding-probe async-sync-load  the same, loading without `await`

let plugin = """
    local mf = require "moonflow"
    return mf.feature {
      name = "field",
      initial = { text = "" },
      actions = { type = { ch = "string" } },
      mutations = { typed = { text = "string" } },
      handle = function(action, state) return { type = "typed", text = state.text .. action.ch } end,
      reduce = function(state, m) state.text = m.text return state end,
    }
    """
let typed = "hello, moonflow"

func folder() throws -> String {
    let dir = NSTemporaryDirectory() + "moonflow-probe-\(getpid())"
    try FileManager.default.createDirectory(atPath: dir + "/field", withIntermediateDirectories: true)
    try plugin.write(toFile: dir + "/field/init.lua", atomically: true, encoding: .utf8)
    return dir
}

func finish(_ text: LuaValue?) -> Never {
    print("text: \(text?.stringValue ?? "nil")")
    exit(text?.stringValue == typed ? 0 : 1)
}

switch CommandLine.arguments.dropFirst().first {
case "sync":
    let host = try FeatureHost(configuration: .init(searchPaths: [try folder()], executor: .mainActor))
    let field = try host.load("field")
    for ch in typed { try field.send(["type": "type", "ch": .string(LuaString(String(ch)))]) }
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
            for ch in typed { try field.send(["type": "type", "ch": .string(LuaString(String(ch)))]) }
            await field.idle()
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
