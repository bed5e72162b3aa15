import LuaKit
import MoonflowEvents
import MoonflowHost
import MoonflowHostTools
import MoonflowLua
import XCTest

/// The pipes between `moonflow run --inspect` and `moonflow-inspector`: every message
/// comes back from its line as it went in, one line each.
final class InspectorPipeTests: XCTestCase {
    func testWhatTheRunSendsComesBackAsItWent() throws {
        let state: LuaValue = [
            "count": 2, "items": LuaValue([LuaValue("a"), LuaValue(1.5)]), "none": .table(LuaTable(isJSONArray: true)),
        ]
        let action: LuaValue = ["type": "add", "text": "line\none \"quoted\""]
        let messages: [InspectorPipe.ToChild] = [
            .started(
                name: "counter", version: 3, path: "plugins/counter",
                actions: ["increment": ["by": "integer?"], "reset": [:]], clock: .real),
            .started(name: "composed", version: 1, path: "app.lua", actions: nil, clock: .real),
            .event(.state(state, seq: 0), t: 0, cause: nil),
            .event(.action(action), t: 5, cause: nil),
            .event(.mutation(["type": "add", "n": 1], seq: 1), t: 5, cause: action),
            .event(.mutation(["type": "add", "n": 2], seq: 2), t: 6, cause: action, causeID: "3"),
            .event(.effect(["type": "toast"], from: "child"), t: 6, cause: action),
            .event(.effect(["type": "toast"], from: nil), t: 6, cause: nil),
            .event(.cancelled(id: "more", cause: ["type": "refresh"], from: "feed"), t: 6, cause: action),
            .event(.cancelled(id: "more", cause: nil, from: nil), t: 6, cause: nil),
            .event(
                .reaction(["type": "clear"], to: "cart", from: "payment", effect: ["type": "receipt", "id": "r1"]),
                t: 6,
                cause: action),
            .event(
                .error(message: "init.lua:3: boom\nstack traceback:\n\t[C]: in ?", location: "init.lua:3"), t: 7,
                cause: action),
            .event(.log(message: "hello", location: nil), t: 8, cause: nil),
            .event(
                .reload(
                    files: ["init.lua"], ms: 3.25,
                    changes: ReloadChanges(added: ["a"], stale: [], kept: ["load #2"], cancelled: ["x"])), t: 9,
                cause: nil),
            .input(action, t: 250),
            .answered(line: #"{"service":"drafts:getAll","call":1,"values":[[{"id":1}]],"after":1,"t":32,"n":0}"#),
            .reply(id: 1, message: nil, flights: nil),
            .reply(id: 2, message: "dispatch: undeclared action 'nope'", flights: nil),
        ]
        for message in messages {
            let line = InspectorPipe.line(message)
            XCTAssertFalse(line.contains("\n"), line)
            XCTAssertEqual(try InspectorPipe.toChild(line), message, line)
        }
    }

    func testTheWorkInFlightKeepsItsSummary() throws {
        let flights = [
            FeatureFlight(
                action: ["type": "incrementLater", "ms": 100], what: "the stream handle returned", actionID: 3),
            FeatureFlight(
                action: ["type": "save"], what: "the handler of effect 'fetch'", child: "posts", actionID: 4,
                tag: "effect fetch"),
            FeatureFlight(action: ["type": "load"], what: "a queued (concat) handling", actionID: 5, tag: "queued"),
        ]
        let line = InspectorPipe.line(.reply(id: 7, message: nil, flights: flights.map(InspectorPipe.Flight.init)))
        guard case .reply(7, nil, let back?) = try InspectorPipe.toChild(line) else { return XCTFail(line) }
        XCTAssertEqual(back.map(\.featureFlight), flights)
        XCTAssertEqual(
            back.map(\.featureFlight.summary),
            ["incrementLater #3", "posts: save #4 (effect fetch)", "load #5 (queued)"])
    }

    func testWhatTheInspectorSendsComesBackAsItWent() throws {
        let messages: [InspectorPipe.ToParent] = [
            .listening(
                url: "http://127.0.0.1:4000/?token=ab", authorities: ["127.0.0.1:4000", "localhost:4000", "[::1]:4000"]),
            .failed(message: "127.0.0.1:80: cannot listen there (denied); pick another port, or :0 for any free one"),
            .dispatch(id: 1, action: ["type": "increment", "by": 2]),
            .restart(id: 2),
            .inFlight(id: 3),
            .debug(
                id: 4, inputs: [#"{"at":0,"send":{"type":"increment"}}"#, #"{"at":5,"send":{"type":"reset"}}"#],
                answers: [#"{"service":"clock","call":1,"values":[5]}"#], action: 1),
        ]
        for message in messages {
            XCTAssertEqual(try InspectorPipe.toParent(InspectorPipe.line(message)), message)
        }
        XCTAssertThrowsError(try InspectorPipe.toParent("{\"m\":\"nonsense\"}"))
        XCTAssertThrowsError(try InspectorPipe.toChild("not json"))
    }

    func testOverServesLinkTheFeaturesNumberGoesFirst() throws {
        let line = InspectorPipe.line(.input(["type": "add", "text": "a \"b\""], t: 5), feature: 3)
        XCTAssertEqual(line, #"{"f":3,"m":"input","t":5,"action":{"text":"a \"b\"","type":"add"}}"#)
        XCTAssertEqual(DevServerMessages.read(line)?.feature, 3)
        XCTAssertEqual(DevServerMessages.read(line)?.m, "input")
        XCTAssertEqual(try InspectorPipe.toChild(line), .input(["type": "add", "text": "a \"b\""], t: 5))
        XCTAssertEqual(InspectorPipe.line(.restart(id: 2), feature: 1), #"{"f":1,"m":"restart","id":2}"#)
        XCTAssertEqual(InspectorPipe.line(.restart(id: 2)), #"{"m":"restart","id":2}"#)
    }

    func testTheChildsArgumentsReadBack() {
        let arguments = InspectorPipe.arguments(address: "0.0.0.0:9000", frames: 10, bytes: 1 << 20)
        XCTAssertEqual(InspectorPipe.settings(arguments)?.address, "0.0.0.0:9000")
        XCTAssertEqual(InspectorPipe.settings(arguments)?.frames, 10)
        XCTAssertEqual(InspectorPipe.settings(arguments)?.bytes, 1 << 20)
        XCTAssertNil(InspectorPipe.settings(["--listen"]))
        XCTAssertNil(InspectorPipe.settings(["--what", "x"]))
    }
}
