import Foundation
import LuaKit
import MoonflowEvents
import MoonflowHost
import MoonflowHostTools
import MoonflowLua
import XCTest

/// What `moonflow run --format jsonl` prints for a feature's events, one JSON object a line.
final class EventPrinterTests: XCTestCase {
    func testTheJsonlPrinterRendersWhatTheFeatureReports() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("printer-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: folder.appendingPathComponent("counter"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try """
        local mf = require "moonflow"
        return mf.feature {
          name = "counter",
          initial = { count = 0, label = "start" },
          actions = { increment = { by = "integer?" } },
          mutations = { add = { n = "integer" } },
          handle = function(action) return { type = "add", n = action.by or 1 } end,
          reduce = function(state, m)
            state.count = state.count + m.n
            state.label = "at " .. state.count
            return state, { type = "milestone", count = state.count }
          end,
        }
        """.write(to: folder.appendingPathComponent("counter/init.lua"), atomically: true, encoding: .utf8)
        let host = try FeatureHost(configuration: .init(searchPaths: [folder.path], clock: .virtual))
        let counter = try host.load("counter")
        let printer = EventPrinter(format: .jsonl)
        let lines = Lines()
        let token = counter.observe { event in lines.append(printer.render(event, t: 0)) }
        defer { token.cancel() }
        counter.start()
        try counter.send(["type": "increment", "by": 10])
        host.settle()
        XCTAssertEqual(
            lines.all,
            [
                #"{"event":"state","t":0,"seq":0,"state":{"count":0,"label":"start"}}"#,
                #"{"event":"action","t":0,"action":{"by":10,"type":"increment"}}"#,
                #"{"event":"mutation","t":0,"seq":1,"mutation":{"n":10,"type":"add"}}"#,
                #"{"event":"state","t":0,"seq":1,"state":{"count":10,"label":"at 10"}}"#,
                #"{"event":"effect","t":0,"effect":{"count":10,"type":"milestone"}}"#,
            ])
    }
}

private final class Lines: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    func append(_ line: String) { lock.lock(); lines.append(line); lock.unlock() }
    var all: [String] { lock.lock(); defer { lock.unlock() }; return lines }
}
