import MoonflowHost
import LuaKit
import MoonflowLua
import XCTest

/// The embedding example of README.md ("Embedding in Swift"), compiled and run as written.
final class ReadmeEmbeddingTests: XCTestCase {
    func testReadmeEmbeddingExample() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        _ = FileManager.default.changeCurrentDirectoryPath(root.path)

        // --- README.md: Embedding in Swift ---
        struct CounterView: Decodable { let count: Int }

        let host = try FeatureHost(configuration: .init(searchPaths: ["plugins"]))
        let counter = try await host.load("counter")
        let effects = counter.effects  // outward effects, as an AsyncSequence
        counter.start()
        try counter.send(["type": "increment", "by": 9])
        try counter.send(["type": "increment"])
        var milestone: LuaValue?
        for await effect in effects { milestone = effect; break }
        let view = try counter.decodeState(CounterView.self)
        // --- end ---

        XCTAssertEqual(milestone, ["type": "milestone", "count": 10])
        XCTAssertEqual(view.count, 10)
        XCTAssertThrowsError(try counter.send(["type": "jump"])) { error in
            XCTAssertTrue("\(error)".contains("undeclared action 'jump'"), "\(error)")
        }
    }

    func testSwiftServiceReentersTheHost() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("mf-\(UUID())/greeter")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try """
        local mf = require "moonflow"
        return mf.feature {
          name = "greeter",
          initial = { text = "" },
          actions = { greet = { who = "string" } },
          mutations = { greeted = { text = "string" } },
          handle = function(a, _, env)
            return env.services.greeting(a.who):map(function(t) return { type = "greeted", text = t } end)
          end,
          reduce = function(s, m) s.text = m.text return s end,
        }
        """.write(to: dir.appendingPathComponent("init.lua"), atomically: true, encoding: .utf8)
        struct Who: Decodable { let name: String }
        let host = try FeatureHost(configuration: .init(searchPaths: [dir.deletingLastPathComponent().path]))
        host.register(service: "greeting") { (who: String) async throws -> String in
            try await Task.sleep(nanoseconds: 1_000_000)
            return "hello, \(who)"
        }
        let greeter = try await host.load("greeter")
        let states = greeter.states
        greeter.start()
        try greeter.send(["type": "greet", "who": "moon"])
        var last: LuaValue?
        for await s in states where s != ["text": ""] { last = s; break }
        XCTAssertEqual(last, ["text": "hello, moon"])
    }
}
