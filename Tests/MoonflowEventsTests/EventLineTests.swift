import LuaKit
import MoonflowEvents
import MoonflowHost
import MoonflowHostTools
import MoonflowLua
import XCTest

/// The lines of a run's events, a recording and the run's timed input, each written by one
/// builder (`EventLine`, `RecordingLine`, `TimedInput`) whoever writes them.
final class EventLineTests: XCTestCase {
    func testAnInspectorFramesOwnFieldsGoFirstAndItsCountIsCalledStep() {
        var head = JSONObjectWriter()
        head.add("seq", 7)
        var cause = JSONObjectWriter()
        cause.add("seq", 5)
        cause.add("action", ["type": "add"], root: "cause", otherwise: "{}")
        head.add("cause", cause)
        let mutation = FeatureEvent.mutation(["type": "added", "n": 1], seq: 3)
        XCTAssertEqual(
            EventLine.text(mutation, t: 12, head: head, step: "step"),
            #"{"seq":7,"cause":{"seq":5,"action":{"type":"add"}},"event":"mutation","t":12,"step":3,"mutation":{"n":1,"type":"added"}}"#
        )
        // The jsonl line of the same event: no head, its count called `seq`.
        XCTAssertEqual(
            EventLine.text(mutation, t: 12), #"{"event":"mutation","t":12,"seq":3,"mutation":{"n":1,"type":"added"}}"#)
    }

    /// An `mf.compose`'s `react`: an action line naming the child it went to and the effect
    /// (and its child) behind it.
    func testAReactionIsAnActionLineWithTheEffectBehindIt() {
        let event = FeatureEvent.reaction(
            ["type": "clear"], to: "cart", from: "payment", effect: ["type": "receipt", "id": "r1"])
        XCTAssertEqual(
            EventLine.text(event, t: 300),
            #"{"event":"action","t":300,"to":"cart","react":{"from":"payment","effect":{"id":"r1","type":"receipt"}},"action":{"type":"clear"}}"#
        )
        XCTAssertEqual(
            EventPrinter(format: .pretty).render(event, t: 300),
            "   300 ms    → clear to cart (react to effect receipt from payment)")
    }

    /// An internal effect, the service call its handler made, and a broken invariant: each a
    /// line of its own in jsonl and in pretty output, the call under the effect that made it.
    func testInternalEffectsCallsAndBrokenInvariantsAreLinesOfTheirOwn() {
        let effect = FeatureEvent.internalEffect(["type": "saveDraft"], from: nil)
        let call = FeatureEvent.call(service: "drafts:put", call: 2)
        let invariant = FeatureEvent.invariant(
            name: "totalAddsUp", seq: 3, action: ["type": "add", "sku": "tea"], reason: "300 ~= 0")
        XCTAssertEqual(EventLine.text(effect, t: 0), #"{"event":"internal","t":0,"effect":{"type":"saveDraft"}}"#)
        XCTAssertEqual(EventLine.text(call, t: 0), #"{"event":"call","t":0,"service":"drafts:put","call":2}"#)
        XCTAssertEqual(
            EventLine.text(invariant, t: 5),
            #"{"event":"invariant","t":5,"seq":3,"invariant":"totalAddsUp","reason":"300 ~= 0","action":{"sku":"tea","type":"add"}}"#
        )
        XCTAssertEqual(
            EventLine.text(.internalEffect(["type": "save"], from: "cart"), t: 0),
            #"{"event":"internal","t":0,"from":"cart","effect":{"type":"save"}}"#)
        let pretty = EventPrinter(format: .pretty)
        XCTAssertEqual(pretty.render(effect, t: 0), "     0 ms    ⇢ internal effect saveDraft")
        XCTAssertEqual(pretty.render(call, t: 0), "     0 ms      ↗ call drafts:put #2")
        XCTAssertEqual(
            pretty.render(invariant, t: 5), "     5 ms    ✗ invariant totalAddsUp broken at step 3 after add: 300 ~= 0")
    }

    /// `env.cancel(id)` stopped streams: the id, the child under `mf.compose`, and the action
    /// that cancelled them.
    func testACancelledLineNamesTheIdAndTheActionThatCancelled() {
        let event = FeatureEvent.cancelled(id: "more", cause: ["type": "refresh"], from: "feed")
        XCTAssertEqual(
            EventLine.text(event, t: 50),
            #"{"event":"cancelled","t":50,"from":"feed","id":"more","by":{"type":"refresh"}}"#)
        XCTAssertEqual(
            EventPrinter(format: .pretty).render(event, t: 50), "    50 ms    ✕ cancelled more in feed (by refresh)")
        XCTAssertEqual(
            EventLine.text(.cancelled(id: "more", cause: nil, from: nil), t: 50),
            #"{"event":"cancelled","t":50,"id":"more"}"#)
    }

    func testAStateWrittenAlreadyGoesInAsItWas() {
        let event = FeatureEvent.state(["count": 1], seq: 2)
        // Straight from the Lua table, in the table's own order: not parsed, not sorted.
        XCTAssertEqual(
            EventLine.text(event, t: 0, from: "cart", state: { .json(Array(#"{"zz":1,"count":1}"#.utf8)) }),
            #"{"event":"state","t":0,"seq":2,"from":"cart","state":{"zz":1,"count":1}}"#)
        XCTAssertEqual(
            EventLine.text(event, t: 0, state: { .patch(#"[{"op":"replace","path":"/count","value":1}]"#) }),
            #"{"event":"state","t":0,"seq":2,"patch":[{"op":"replace","path":"/count","value":1}]}"#)
        XCTAssertEqual(EventLine.text(event, t: 0), #"{"event":"state","t":0,"seq":2,"state":{"count":1}}"#)
    }

    func testAnEventThatIsNotJSONBecomesAnErrorLineBehindTheSameHead() {
        var head = JSONObjectWriter()
        head.add("seq", 1)
        let line = EventLine.text(.effect(["type": "ratio", "value": .number(.nan)], from: nil), t: 4, head: head)
        XCTAssertTrue(line.hasPrefix(#"{"seq":1,"event":"error","t":4,"message":"#), line)
        XCTAssertTrue(line.contains("effect.value"), line)
        XCTAssertEqual(
            EventLine.text(.state(["n": 1], seq: 0), t: 0, state: { throw HostError("the state is gone") }),
            #"{"event":"error","t":0,"message":"the state is gone"}"#)
    }

    func testNamesFromOutsideAreEscaped() {
        // A child's, an app's or a file's name is data: quoted, control characters escaped.
        XCTAssertEqual(
            EventLine.text(.effect(["type": "toast"], from: "a \"b\"\n"), t: 1),
            #"{"event":"effect","t":1,"from":"a \"b\"\n","effect":{"type":"toast"}}"#)
        XCTAssertEqual(
            EventLine.inspector(url: "http://127.0.0.1:4000/?token=ab", app: "My\u{1B}]0;App", feature: "counter"),
            #"{"event":"inspector","t":0,"url":"http://127.0.0.1:4000/?token=ab","app":"My\u001b]0;App","feature":"counter"}"#
        )
        XCTAssertEqual(EventLine.inspector(url: "http://x/"), #"{"event":"inspector","t":0,"url":"http://x/"}"#)
        XCTAssertEqual(
            EventLine.debugger(address: "127.0.0.1:5000", token: "t", tokenFile: "/tmp/a\tb"),
            #"{"event":"debugger","t":0,"address":"127.0.0.1:5000","token":"t","tokenFile":"/tmp/a\tb"}"#)
        XCTAssertEqual(
            EventLine.serve(url: "ws://h/", plugins: ["plugins", "x\"y"], connect: "c(\"ws://h/\")"),
            #"{"event":"serve","t":0,"url":"ws://h/","plugins":["plugins","x\"y"],"connect":"c(\"ws://h/\")"}"#)
    }

    func testErrorsSplitTheirTracebackAndReloadsNameWhatChanged() {
        XCTAssertEqual(
            EventLine.text(
                .error(message: "init.lua:3: boom\nstack traceback:\n\t[C]: in ?", location: "init.lua:3"), t: 2),
            #"{"event":"error","t":2,"message":"init.lua:3: boom","where":"init.lua:3","traceback":"stack traceback:\n\t[C]: in ?"}"#
        )
        var changes = ReloadChanges(added: ["a"], stale: [], kept: ["load #2"], cancelled: [])
        changes.restarted = true
        XCTAssertEqual(
            EventLine.text(.reload(files: ["init.lua"], ms: 3.14, changes: changes), t: 9),
            #"{"event":"reload","t":9,"files":["init.lua"],"ms":3.1,"added":["a"],"kept":["load #2"],"restarted":true}"#
        )
    }

    func testARecordingsLinesAndTimedInput() {
        let run = RunDescription(name: "count\"er", version: 2, path: "plugins/counter", actions: nil, clock: .virtual)
        XCTAssertEqual(
            RecordingLine.header(run),
            #"{"record":"moonflow-session","format":1,"feature":"count\"er","version":2,"path":"plugins/counter","clock":"virtual","moonflow":"\#(FeatureHost.version)","effects":true}"#
        )
        XCTAssertEqual(
            RecordingLine.input(["type": "add", "by": 2], t: 30), #"{"input":{"by":2,"type":"add"},"t":30}"#)
        XCTAssertEqual(
            RecordingLine.service(
                "users:getAll", call: 1, values: [["id": 1]], error: "no \"db\"",
                arrived: ServiceDelivery(after: 2, t: 40, order: 0)),
            #"{"service":"users:getAll","call":1,"values":[{"id":1}],"error":"no \"db\"","after":2,"t":40,"n":0}"#)
        XCTAssertEqual(
            RecordingLine.service("s", call: 3, values: [], error: nil, arrived: nil),
            #"{"service":"s","call":3,"values":[]}"#)
        XCTAssertEqual(
            TimedInput.line(at: 250, send: ["type": "add"], root: "input"), #"{"at":250,"send":{"type":"add"}}"#)
        XCTAssertEqual(TimedInput.line(at: 250, send: #"{"type":"add"}"#), #"{"at":250,"send":{"type":"add"}}"#)
    }
}
