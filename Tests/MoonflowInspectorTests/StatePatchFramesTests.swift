import Foundation
import LuaKit
import MoonflowHost
import MoonflowLua
import MoonflowInspector
import MoonflowRun
import XCTest

/// The inspector's `state` frames never lie: over a run of random reducer
/// programs (the fixture plugin `Tests/Fixtures/plugins/writes`), the first
/// frame's state with every later frame's patch applied in order equals each
/// whole state the run prints, compared as JSON.
final class StatePatchFramesTests: XCTestCase {
    func testPatchesInTheFramesGiveEveryWholeState() throws {
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/plugins/writes")
        var options = FeatureRun.Options(path: fixture.path)
        options.format = .jsonl
        options.clock = .virtual
        let hub = InspectorHub()
        options.observers = [hub]
        let frames = FrameList()
        _ = hub.connect { frame in frames.add(frame) }
        var seed: UInt64 = 99
        let actions = (0..<300).map { _ -> String in
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            return "{\"type\":\"step\",\"seed\":\(seed >> 44)}"
        }
        var next = actions.makeIterator()
        let printed = PrintedStates()
        let input = InputSource(interactive: false, name: "test") { next.next() }
        _ = FeatureRun(options: options, input: input, write: printed.add).run()
        let full = printed.all.map { json($0) }
        XCTAssertEqual(full.count, actions.count + 1)

        let states = try frames.all.compactMap { frame -> [String: Any]? in
            let object = try JSONSerialization.jsonObject(with: Data(frame.utf8)) as? [String: Any]
            return object?["event"] as? String == "state" ? object : nil
        }
        XCTAssertEqual(states.count, full.count)
        var state: Any = try XCTUnwrap(states.first?["state"])
        for (i, frame) in states.enumerated().dropFirst() {
            let patch = try XCTUnwrap(frame["patch"] as? [[String: Any]], "frame \(i)")
            state = try apply(patch, to: state)
            XCTAssertEqual(canonical(state), canonical(full[i]), "state \(i)")
        }
    }

    /// An app that links the inspector without the tool gets no `rerun` or `toggle`: the
    /// page is told why instead of waiting for an answer that never comes.
    func testAnInspectorWithoutAWayToRunAgainRefusesRerunSayingWhy() throws {
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/plugins/writes")
        var options = FeatureRun.Options(path: fixture.path)
        options.clock = .virtual
        let hub = InspectorHub()
        options.observers = [hub]
        let frames = FrameList()
        let page = hub.connect { frame in frames.add(frame) }
        var lines = ["{\"type\":\"step\",\"seed\":1}"].makeIterator()
        _ = FeatureRun(
            options: options, input: InputSource(interactive: false, name: "test") { lines.next() }, write: { _ in }
        ).run()
        hub.receive(#"{"cmd":"rerun"}"#, from: page)
        let deadline = Date().addingTimeInterval(10)
        while !frames.all.contains(where: { $0.contains("\"cmd\":\"rerun\"") }), Date() < deadline {
            Thread.sleep(forTimeInterval: 0.01)
        }
        let reply = try XCTUnwrap(frames.all.first { $0.contains("\"cmd\":\"rerun\"") })
        XCTAssertTrue(
            reply.contains(
                "rerun: this inspector was made without a way to run the feature again (InspectorHub(rerun:))"), reply)
        XCTAssertTrue(reply.contains("\"ok\":false"), reply)
    }

    /// JSON with sorted keys: an array never equals an object, an absent key never `null`.
    private func canonical(_ v: Any) -> String {
        (try? String(
            decoding: JSONSerialization.data(withJSONObject: v, options: [.sortedKeys, .fragmentsAllowed]),
            as: UTF8.self)) ?? "\(v)"
    }

    private func json(_ value: LuaValue) -> Any {
        (try? JSONSerialization.jsonObject(with: Data(value.json().utf8), options: [.fragmentsAllowed])) ?? NSNull()
    }

    /// RFC 6902 add, remove and replace, as a page applies them.
    private func apply(_ ops: [[String: Any]], to document: Any) throws -> Any {
        struct Bad: Error { let op: String; init(op: [String: Any]) { self.op = "\(op)" } }
        var document = document
        for op in ops {
            guard let kind = op["op"] as? String, let path = op["path"] as? String else { throw Bad(op: op) }
            let tokens = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
                .map { $0.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~") }
            func step(_ node: Any, _ rest: ArraySlice<String>) throws -> Any {
                guard let token = rest.first else {
                    if kind == "remove" { throw Bad(op: op) }; return op["value"] ?? NSNull()
                }
                let more = rest.dropFirst()
                if var array = node as? [Any] {
                    guard let i = Int(token), i >= 0 else { throw Bad(op: op) }
                    if more.isEmpty {
                        switch kind {
                        case "add":
                            guard i <= array.count else { throw Bad(op: op) };
                            array.insert(op["value"] ?? NSNull(), at: i)
                        case "remove": guard i < array.count else { throw Bad(op: op) }; array.remove(at: i)
                        default: guard i < array.count else { throw Bad(op: op) }; array[i] = op["value"] ?? NSNull()
                        }
                        return array
                    }
                    guard i < array.count else { throw Bad(op: op) }
                    array[i] = try step(array[i], more)
                    return array
                }
                guard var object = node as? [String: Any] else { throw Bad(op: op) }
                if more.isEmpty {
                    if kind != "add" && object[token] == nil { throw Bad(op: op) }
                    object[token] = kind == "remove" ? nil : (op["value"] ?? NSNull())
                    return object
                }
                guard let child = object[token] else { throw Bad(op: op) }
                object[token] = try step(child, more)
                return object
            }
            document = try step(document, tokens[...])
        }
        return document
    }
}

/// The frames a page received (the hub sends under its lock, from the run's thread).
private final class FrameList: @unchecked Sendable {
    private let lock = NSLock()
    private var frames: [String] = []
    func add(_ frame: String) { lock.withLock { frames.append(frame) } }
    var all: [String] { lock.withLock { frames } }
}

/// The whole states a run prints in jsonl (`--state full`), read back from its lines.
private final class PrintedStates: @unchecked Sendable {
    private let lock = NSLock()
    private var states: [LuaValue] = []

    /// Every state so far, in order.
    var all: [LuaValue] { lock.withLock { states } }

    /// Takes one printed line; keeps it when it is a `state` event with a whole state.
    func add(_ line: String) {
        guard line.hasPrefix("{\"event\":\"state\""), let event = try? LuaValue(json: line), let state = event["state"]
        else { return }
        lock.withLock { states.append(state) }
    }
}
