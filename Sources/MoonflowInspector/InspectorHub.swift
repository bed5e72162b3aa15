import Foundation
import LuaKit
import MoonflowEvents
import MoonflowHost
import MoonflowLua

/// The inspector's protocol, apart from the network: it numbers the run's
/// events into frames, links each to the action that caused it, keeps them
/// for pages that connect late, and answers the pages' commands.
///
///     let hub = InspectorHub(rerun: FeatureRun.rerun)  // what `rerun` and `toggle` run
///     options.observers.append(hub)                 // FeatureRun feeds it
///     let page = hub.connect { frame in socket.send(frame) }
///     hub.receive(#"{"cmd":"hello","since":41}"#, from: page)
///
/// Frames are JSON objects, one per WebSocket text message (docs/inspector.md,
/// "The protocol"): a `session` frame, then the run's jsonl events, each
/// with `seq` (its place among the frames) and, for what an action caused,
/// `cause`; `state` frames after the first carry a JSON Patch.
///
/// **Threading:** every method may be called from any thread; one lock guards
/// everything, and a page's `send` is called under it (it must not block).
public final class InspectorHub: RunObserver, @unchecked Sendable {
    /// A state kept whole every `snapshotEvery` state frames; `jump` rebuilds
    /// the others from the nearest one before them by applying patches.
    public static let snapshotEvery = 64
    /// How many differing steps a `rerun` frame details (the new state and the diff).
    public static let rerunDetails = 50

    /// What the hub keeps: the last `frames` frames, and at most `bytes` in all (half
    /// for the frames and their snapshots, a quarter for older snapshots, a quarter
    /// for the actions `rerun` sends again). A page's queue of frames not yet written
    /// may hold `bytes` before the page is dropped (it reconnects and resyncs).
    public struct Limits: Sendable, Equatable {
        public var frames: Int
        public var bytes: Int
        public init(frames: Int = 10_000, bytes: Int = 64 << 20) {
            self.frames = max(1, frames)
            self.bytes = max(1, bytes)
        }
    }
    public let limits: Limits

    private struct Page {
        let send: @Sendable (String) -> Void
        /// Where the page's commands that wait for the run (`dispatch`, `restart`, `inflight`)
        /// wait, one after another in the order sent: a thread of libdispatch's own, never the
        /// connection's (a Swift concurrency thread, which the server needs for every other
        /// request and page: two pages waiting on a run busy in a handler froze them all).
        let waits = DispatchQueue(label: "moonflow.inspector.page")
        /// Between `jump` and `resume`: the page looks at the past, its dispatches wait.
        var travelling = false
        var queued: [LuaValue] = []
        var received = 0
        /// The action frames toggled off (`toggle`).
        var off: Set<Int> = []
    }

    /// A state frame in the window: its seq, step, and its patch (nil when the frame holds
    /// the whole state), kept beside the frame's text so that moving the window or
    /// jumping never parses JSON back.
    private struct StateFrame {
        let seq: Int
        let step: Int
        let patch: [JSONPatch.Operation]?
    }

    /// A whole state kept as JSON, for `jump` and for pages that connect after the window moved.
    private struct Snapshot {
        let seq: Int
        let step: Int
        let json: String
    }

    /// An action sent, kept for `rerun` and `toggle`.
    private struct Input {
        let t: Int
        let action: String
        var frame: Int?
        /// The input line that sends it again at its time.
        var line: String { TimedInput.line(at: t, send: action) }
    }

    /// The bytes `text` holds on the heap besides the 16 of the `String` itself: none for a
    /// short one (stored inline), else its storage object's header and its bytes with a
    /// terminating zero, rounded up to the allocator's 16.
    static func heldBytes(_ text: String) -> Int {
        let count = text.utf8.count
        return count <= 15 ? 0 : (32 + count + 1 + 15) & ~15
    }

    private let lock = NSLock()
    /// The window: frames `first ..< first + frames.count`, `frameBytes` in all (snapshots in it included).
    private var frames: [String] = []
    private var first = 0
    private var frameBytes = 0
    private var run: RunDescription?
    private var dispatcher: (any RunDispatcher)?
    private var pages: [Int: Page] = [:]
    private var nextPage = 0
    /// The window's state frames in order, and whole states every `snapshotEvery` of them.
    private var states: [StateFrame] = []
    private var snapshots: [Int: String] = [:]
    /// Whole states from before the window (one every `snapshotEvery` state frames), oldest first.
    private var older: [Snapshot] = []
    private var olderBytes = 0
    private var stateCount = 0
    /// The whole state as the window starts (that of the last state frame before it, with
    /// its seq and step), once it has moved.
    private var windowBase: (seq: Int, step: Int, state: LuaValue)?
    private var lastState: LuaValue?
    /// Every action sent, with its time (for `rerun`, which sends it again then) and its JSON,
    /// which also links it to its action frame when that arrives (`frame`, for `toggle`).
    /// Emptied for good when they outgrow their quarter of `limits.bytes`.
    private var inputs = BlockList<Input>()
    /// Every service call's answer so far (a recording's `service` lines, `answered`), so
    /// `rerun` answers each call as the run's was, at the same point. Counted and dropped
    /// with `inputs`.
    private var answers = BlockList<String>()
    /// What the texts of `inputs` and `answers` hold on the heap (`heldBytes`).
    private var inputTextBytes = 0
    private var inputsDropped = 0
    private var unlinkedInput = 0
    /// Recent action frames, for `cause`.
    private var actionFrames: [(action: LuaValue, seq: Int, at: Date, id: String?)] = []

    /// Runs the feature again for `rerun` and `toggle`: the plugin at `path` as its code is
    /// now, sent these input lines on the virtual clock in a host of its own; every state it
    /// gives, in order. `answers` (`rerun`: the run's service lines) answer each service or
    /// repository call as the run's was, at the point it arrived; with none (`toggle`, whose
    /// left-out actions change which calls are made) the calls run again, declared
    /// repositories fresh in memory.
    public typealias Rerun = @Sendable (_ path: String, _ inputLines: [String], _ answers: [String]) -> [LuaValue]

    private let rerun: Rerun?

    /// Adds to a refusal what the person reading it can do about it, in the words of the
    /// program that made the hub (a command-line tool names its flags): the hub itself says
    /// only what happened, with `Limits`' names (frames, bytes) for what it keeps.
    public typealias Advice = @Sendable (_ message: String) -> String

    private let advice: Advice

    /// - Parameters:
    ///   - rerun: how to run the feature again; without it, `rerun` and `toggle` are refused.
    ///   - advice: what to add to each refusal a page is sent (nothing by default).
    public init(limits: Limits = Limits(), rerun: Rerun? = nil, advice: @escaping Advice = { $0 }) {
        self.limits = limits
        self.rerun = rerun
        self.advice = advice
    }

    // MARK: - RunObserver

    public func started(_ run: RunDescription, dispatch: any RunDispatcher) {
        lock.withLock {
            self.run = run
            dispatcher = dispatch
            for page in pages.values { page.send(sessionFrame) }
        }
    }

    public func observe(_ event: FeatureEvent, t: Int, cause: LuaValue?) {
        observe(event, t: t, cause: cause, causeID: nil)
    }

    /// An event and its cause; `causeID` (the action's number in its loop) picks the right
    /// action frame when two are equal: a late mutation of the first of two `load`s in
    /// flight joins the first.
    public func observe(_ event: FeatureEvent, t: Int, cause: LuaValue?, causeID: String?) {
        lock.withLock {
            let seq = first + frames.count
            var head = JSONObjectWriter()
            head.add("seq", seq)
            // An action frame is told its own action as `cause`: it starts a group, not joins
            // that of an earlier frame of the same action.
            var own = false
            if case .action(let action) = event { own = action == cause }
            if let cause, !own,
                let from = causeID.flatMap({ id in actionFrames.last { $0.id == id && $0.action == cause } })
                    ?? actionFrames.last(where: { $0.action == cause })
            {
                var link = JSONObjectWriter()
                link.add("seq", from.seq)
                link.add("action", cause, root: "cause", otherwise: "{}")
                head.add("cause", link)
            }
            let frame: String
            switch event {
            case .state(let state, let step):
                frame = stateFrame(state, step: step, seq: seq, t: t, head: head)
            default:
                // A composite's reaction is an action frame too (what it causes joins it), under
                // the action behind the effect it reacts to (its `cause`); it is no input.
                if case .reaction(let action, _, _, _) = event {
                    actionFrames.append((action, seq, Date(), nil))
                    if actionFrames.count > 4096 { actionFrames.removeFirst(2048) }
                }
                if case .action(let action) = event {
                    actionFrames.append((action, seq, Date(), causeID))
                    // The oldest input not yet handled that is this action.
                    let sent = unlinkedInput < inputs.count ? json(action, "action") : ""
                    if unlinkedInput < inputs.count,
                        let i = inputs[unlinkedInput...].firstIndex(where: { $0.frame == nil && $0.action == sent })
                    {
                        inputs[i].frame = seq
                        while unlinkedInput < inputs.count, inputs[unlinkedInput].frame != nil { unlinkedInput += 1 }
                    }
                    if actionFrames.count > 4096 { actionFrames.removeFirst(2048) }
                }
                // A mutation's jsonl `seq` (reduced mutations so far) is `step` here: `seq` numbers frames.
                frame = EventLine.text(event, t: t, head: head, step: "step")
            }
            frames.append(frame)
            frameBytes += frame.utf8.count
            trim()
            for page in pages.values { page.send(frame) }
        }
    }

    public func input(_ action: LuaValue, t: Int) {
        lock.withLock {
            guard inputsDropped == 0 else { inputsDropped += 1; return }
            let input = Input(t: t, action: json(action, "action"), frame: nil)
            inputs.append(input)
            inputTextBytes += InspectorHub.heldBytes(input.action)
            dropInputsPastTheirShare()
        }
    }

    /// Past their quarter of `limits.bytes`, the actions and answers go for good: `rerun` and
    /// `toggle` can no longer start from the beginning. Under the lock.
    private func dropInputsPastTheirShare() {
        guard inputBytes > limits.bytes / 4 else { return }
        inputsDropped = max(inputs.count, 1)
        inputs = BlockList()
        answers = BlockList()
        inputTextBytes = 0
        unlinkedInput = 0
    }

    /// What `inputs` and `answers` take in memory, not only their text (an action of 20 bytes
    /// takes about 100; counted by its text, the actions of a long run took four times their
    /// share): their blocks and the heap their texts hold. Under the lock.
    private var inputBytes: Int { inputTextBytes + inputs.storageBytes + answers.storageBytes }

    /// A service call's answer as the run's recorder wrote it (`{"service":...,"call":N,
    /// "values":[...],"after":A,"t":T}`), kept for `rerun`.
    public func answered(_ line: String) {
        lock.withLock {
            guard inputsDropped == 0 else { return }
            answers.append(line)
            inputTextBytes += InspectorHub.heldBytes(line)
            dropInputsPastTheirShare()
        }
    }

    /// Moves the window on when it holds more than `limits.frames` frames or half of
    /// `limits.bytes`: the oldest frames go (a tenth of the window at least, so this
    /// is rare), their snapshots join the older ones, and `windowBase` becomes the
    /// whole state as the window now starts. Under the lock.
    private func trim() {
        let budget = limits.bytes / 2
        guard frames.count > 1, frames.count > limits.frames || frameBytes > budget else { return }
        var drop = 0, bytes = frameBytes
        let least = max(1, frames.count / 10)
        while drop < frames.count - 1, drop < least || frames.count - drop > limits.frames || bytes > budget {
            bytes -= frames[drop].utf8.count
            drop += 1
        }
        let start = first + drop
        let gone = states.prefix { $0.seq < start }.count
        if gone > 0 {
            // Each patch is applied once here, to the state as the window started: no JSON is
            // written or read, so a moving window costs little.
            var state = windowBase?.state
            for i in 0..<gone {
                state = apply(i, to: state)
                if let kept = snapshots.removeValue(forKey: states[i].seq) {
                    frameBytes -= kept.utf8.count
                    keepOlder(Snapshot(seq: states[i].seq, step: states[i].step, json: kept))
                }
            }
            windowBase = state.map { (states[gone - 1].seq, states[gone - 1].step, $0) }
            states.removeFirst(gone)
        }
        for frame in frames[..<drop] { frameBytes -= frame.utf8.count }
        frames.removeFirst(drop)
        first = start
    }

    private func keepSnapshot(_ seq: Int, _ json: String) {
        snapshots[seq] = json
        frameBytes += json.utf8.count
    }

    /// Keeps a whole state from before the window, dropping the oldest ones past a quarter
    /// of `limits.bytes`.
    private func keepOlder(_ snapshot: Snapshot) {
        older.append(snapshot)
        olderBytes += snapshot.json.utf8.count
        var drop = 0
        while drop < older.count, olderBytes > limits.bytes / 4 {
            olderBytes -= older[drop].json.utf8.count
            drop += 1
        }
        older.removeFirst(drop)
    }

    /// The whole state of the window's state frame `index`: its nearest snapshot at or
    /// before it (or the state as the window starts) with the patches after that applied.
    /// Under the lock.
    private func wholeState(_ index: Int) -> LuaValue? {
        var base = index
        while base >= 0, snapshots[states[base].seq] == nil { base -= 1 }
        var state = base >= 0 ? nil : windowBase?.state
        for i in max(base, 0)...index { state = apply(i, to: state) }
        return state
    }

    /// The window's state frame `index` applied to the state before it (nil: not known):
    /// its patch, or its snapshot. Under the lock.
    private func apply(_ index: Int, to state: LuaValue?) -> LuaValue? {
        let frame = states[index]
        if let state, let ops = frame.patch { return JSONPatch.apply(ops, to: state) }
        return snapshots[frame.seq].flatMap { try? LuaValue(json: $0) }
    }

    /// A `state` frame: the whole state the first time, then a patch against the last one.
    private func stateFrame(_ state: LuaValue, step: Int, seq: Int, t: Int, head: JSONObjectWriter) -> String {
        defer { lastState = state }
        let index = stateCount
        stateCount += 1
        let body: EventLine.State
        if let last = lastState, let ops = JSONPatch.patch(from: last, to: state) {
            states.append(StateFrame(seq: seq, step: step, patch: ops))
            if index % InspectorHub.snapshotEvery == 0 { keepSnapshot(seq, json(state, "state")) }
            body = .patch((try? JSONPatch.json(ops)) ?? "[]")
        } else {
            let whole = json(state, "state")
            states.append(StateFrame(seq: seq, step: step, patch: nil))
            keepSnapshot(seq, whole)
            body = .jsonText(whole)
        }
        return EventLine.text(.state(state, seq: step), t: t, head: head, state: { body }, step: "step")
    }

    // MARK: - Pages

    /// A page connected: it gets the `session` frame and every frame so far, then each new one.
    /// - Returns: the page's number, for `receive` and `disconnect`.
    public func connect(send: @escaping @Sendable (String) -> Void) -> Int {
        lock.withLock {
            let id = nextPage
            nextPage += 1
            pages[id] = Page(send: send)
            resync(id, since: -1)
            return id
        }
    }

    public func disconnect(_ page: Int) {
        _ = lock.withLock { pages.removeValue(forKey: page) }
    }

    /// The number of frames so far (kept or not).
    public var frameCount: Int { lock.withLock { first + frames.count } }

    /// What is kept now: the window's frames, and the bytes of everything kept
    /// (frames, snapshots, the actions for `rerun`).
    public var kept: (frames: Int, bytes: Int) {
        lock.withLock { (frames.count, frameBytes + olderBytes + inputBytes) }
    }

    /// The pages connected now.
    public var pageCount: Int { lock.withLock { pages.count } }

    /// Handles one frame a page sent. A bad frame gets a `reply` with `ok: false`
    /// saying what to send instead; the run goes on. What needs the run (`dispatch`,
    /// `restart`, `inflight`) is done on a queue of the page's own, in the order sent, and
    /// answered from there: this returns at once, whatever the run is doing (it is called on
    /// the server's threads, which every other request and page needs).
    public func receive(_ text: String, from id: Int) {
        var toDispatch: [LuaValue] = []
        var toDebug: DebugStep?
        var command = "?"
        let reply: String? = lock.withLock {
            guard pages[id] != nil else { return nil }
            pages[id]!.received += 1
            let n = pages[id]!.received
            let message: LuaValue
            do { message = try LuaValue(json: text) } catch {
                return failure(
                    "?",
                    "frame \(n) from the page is not JSON (\(error)); send an object such as {\"cmd\":\"hello\",\"since\":-1}"
                )
            }
            guard case .string(let name)? = message["cmd"] else {
                return failure(
                    "?", "frame \(n) from the page has no string \"cmd\"; the commands are \(InspectorHub.commands)")
            }
            command = name.description
            switch command {
            case "hello":
                guard let since = message["since"].flatMap(InspectorHub.integer) ?? (message["since"] == nil ? -1 : nil)
                else {
                    return failure(
                        command,
                        "hello: \"since\" must be the seq of the last frame the page holds (an integer), or -1 for everything"
                    )
                }
                resync(id, since: since)
                return nil
            case "dispatch":
                guard let action = message["action"], case .table = action else {
                    return failure(
                        command, "dispatch: \"action\" must be an action object, such as {\"type\":\"increment\"}")
                }
                if pages[id]!.travelling {
                    pages[id]!.queued.append(action)
                    var reply = frame("reply")
                    reply.add("cmd", "dispatch")
                    reply.add("ok", true)
                    reply.add("queued", pages[id]!.queued.count)
                    return reply.text
                }
                toDispatch = [action]
                return nil
            case "jump":
                guard let seq = message["seq"].flatMap(InspectorHub.integer), seq >= 0, seq < first + frames.count
                else {
                    return failure(
                        command, "jump: \"seq\" must be the seq of a frame, 0 to \(first + frames.count - 1)")
                }
                guard let (stateSeq, step, state) = state(at: seq) else {
                    if seq < first {
                        let back =
                            (older.first?.seq ?? windowBase?.seq).map { ", whole states back to frame \($0)" } ?? ""
                        return failure(
                            command,
                            "jump: frame \(seq) is older than the inspector keeps (frames \(first) to \(first + frames.count - 1)\(back)); larger limits (frames, bytes) keep more"
                        )
                    }
                    return failure(command, "jump: no state before frame \(seq)")
                }
                pages[id]!.travelling = true
                var jump = frame("jump")
                jump.add("seq", seq)
                jump.add("stateSeq", stateSeq)
                jump.add("step", step)
                jump.add("state", raw: state)
                return jump.text
            case "inflight", "rerun", "restart":
                return nil
            case "debug":
                switch debugStep(message["seq"]) {
                case .success(let step): toDebug = step
                case .failure(let refused): return refused.reply
                }
                return nil
            case "toggle":
                if let dropped = tooManyInputs(command) { return dropped }
                guard let seq = message["seq"].flatMap(InspectorHub.integer),
                    inputs.contains(where: { $0.frame == seq })
                else {
                    return failure(command, "toggle: \"seq\" must be the seq of an action frame the run was sent")
                }
                if pages[id]!.off.remove(seq) == nil { pages[id]!.off.insert(seq) }
                return nil
            case "resume":
                toDispatch = pages[id]!.queued
                pages[id]!.queued = []
                pages[id]!.travelling = false
                var resume = frame("resume")
                resume.add("seq", first + frames.count - 1)
                resume.add("sent", toDispatch.count)
                resume.add("state", raw: lastState.map { json($0, "state") } ?? "null")
                return resume.text
            default:
                return failure(
                    command, "unknown cmd \"\(LuaValue.escaped(command))\"; the commands are \(InspectorHub.commands)")
            }
        }
        if let reply { send(reply, to: id) }
        if command == "rerun" || command == "toggle" {
            // A whole run on the virtual clock: off the connection's thread, answered when done.
            let off = command == "toggle" ? lock.withLock { pages[id]?.off ?? [] } : []
            DispatchQueue.global().async { [self, command] in send(rerunFrame(command, skipping: off), to: id) }
        }
        guard command == "inflight" || command == "restart" || !toDispatch.isEmpty || toDebug != nil,
            let waits = lock.withLock({ pages[id]?.waits })
        else { return }
        // The feature's events come back through `observe`, and the answers through `send`.
        let (asked, actions, debugging) = (command, toDispatch, toDebug)
        waits.async { [self] in answer(asked, dispatching: actions, debugging: debugging, to: id) }
    }

    /// What a page's command needs the run for: on the page's own queue, outside the lock.
    private func answer(
        _ command: String, dispatching toDispatch: [LuaValue], debugging step: DebugStep? = nil, to id: Int
    ) {
        if command == "inflight" { send(inFlightFrame(), to: id) }
        if let step {
            do {
                guard let dispatcher = lock.withLock({ dispatcher }) else {
                    throw HostError("the feature has not loaded yet; send again once the session frame arrived")
                }
                try dispatcher.openInDebugger(inputLines: step.lines, answers: step.answers, action: step.action)
                var reply = frame("reply")
                reply.add("cmd", "debug")
                reply.add("ok", true)
                reply.add("seq", step.seq)
                reply.add("action", step.action)
                send(reply.text, to: id)
            } catch {
                send(failure(command, "debug: \(error)"), to: id)
            }
        }
        if command == "restart" {
            // The `reload` event and the fresh state come back as frames; the reply says it was done.
            do {
                guard let dispatcher = lock.withLock({ dispatcher }) else {
                    throw HostError("the feature has not loaded yet; send again once the session frame arrived")
                }
                try dispatcher.restart()
                send(done("restart"), to: id)
            } catch {
                send(failure(command, "restart: \(error)"), to: id)
            }
        }
        for action in toDispatch {
            do {
                guard let dispatcher = lock.withLock({ dispatcher }) else {
                    throw HostError("the feature has not loaded yet; send again once the session frame arrived")
                }
                try dispatcher.dispatch(action)
                if command == "dispatch" { send(done("dispatch"), to: id) }
            } catch {
                send(failure(command, "\(command): \(error)"), to: id)
            }
        }
    }

    static let commands =
        "hello (since), dispatch (action), jump (seq), resume, inflight, rerun, toggle (seq), restart, debug (seq)"

    /// What `debug` asks the run for: the input lines up to and including the action of the
    /// frame asked about (`action`, its place among them from 0, frame `seq`), and every
    /// service answer so far, so a host of its own can run them again exactly and stop there.
    private struct DebugStep: Sendable {
        let seq: Int
        let action: Int
        let lines: [String]
        let answers: [String]
    }

    /// The `DebugStep` of frame `seq` (an action frame, or one an action caused: its `cause`),
    /// or the refusal naming what to send. Under the lock.
    private func debugStep(_ seq: LuaValue?) -> Result<DebugStep, Refused> {
        let last = first + frames.count - 1
        guard let seq = seq.flatMap(InspectorHub.integer), seq >= first, seq <= last else {
            return .failure(
                Refused(
                    reply: failure(
                        "debug",
                        "debug: \"seq\" must be the seq of a frame the inspector keeps, \(first) to \(last)")))
        }
        if let dropped = tooManyInputs("debug") { return .failure(Refused(reply: dropped)) }
        // Up the causes to the action that was sent (a composite's reaction is caused in turn).
        var at = seq
        for _ in 0..<8 {
            if let k = inputs.firstIndex(where: { $0.frame == at }) {
                return .success(
                    DebugStep(seq: at, action: k, lines: inputs[...k].map(\.line), answers: Array(answers)))
            }
            guard at >= first, let frame = try? LuaValue(json: frames[at - first]),
                let cause = frame["cause"]?["seq"].flatMap(InspectorHub.integer), cause < at
            else { break }
            at = cause
        }
        return .failure(
            Refused(
                reply: failure(
                    "debug",
                    "debug: frame \(seq) is no action the run was sent, nor caused by one still kept; pick an action (or what it caused) in the timeline"
                )))
    }

    /// `{"event":"rerun","states":N,"differs":[SEQ,...],"state":{...}}`: every recorded action
    /// but those of the action frames in `skipping`, sent again at its time to the plugin's
    /// code as it is now (after a reload, say), on the virtual clock in a host of its own
    /// (service calls answered as in the run; `toggle` calls them again, repositories in
    /// memory): the `seq` of each state frame whose state is not
    /// what this run gives at that step, and its last state. `toggle` answers the same,
    /// with `"off"`: the action frames left out.
    private func rerunFrame(_ command: String, skipping off: Set<Int>) -> String {
        let taken = lock.withLock {
            () -> Result<(RunDescription, BlockList<Input>, [String], [(Int, LuaValue)], Int), Refused> in
            guard rerun != nil else {
                return .failure(
                    Refused(
                        reply: failure(
                            command,
                            "\(command): this inspector was made without a way to run the feature again (InspectorHub(rerun:))"
                        )))
            }
            if let dropped = tooManyInputs(command) { return .failure(Refused(reply: dropped)) }
            guard let run else {
                return .failure(Refused(reply: failure(command, "\(command): the feature has not loaded yet")))
            }
            let (recorded, skipped) = windowStates()
            return .success((run, inputs, command == "rerun" ? Array(answers) : [], recorded, skipped))
        }
        guard case .success(let (run, inputs, answers, recorded, skipped)) = taken else {
            if case .failure(let refused) = taken { return refused.reply }
            return ""
        }
        let lines = inputs.filter { $0.frame.map { !off.contains($0) } ?? true }.map(\.line)
        // The recorded states are the window's: the run's first `skipped` states went.
        let states = Array((rerun?(run.path, lines, answers) ?? []).dropFirst(skipped))
        var differs: [Int] = []
        // For the first differing steps, what the code gives now and the diff, as `moonflow replay` prints it.
        var changes: [JSONObjectWriter] = []
        for (i, (seq, state)) in recorded.enumerated() where i >= states.count || states[i] != state {
            differs.append(seq)
            guard changes.count < InspectorHub.rerunDetails else { continue }
            let now = i < states.count ? states[i] : LuaValue.nil
            let diff =
                i < states.count
                ? StateDiff.lines(expected: state, actual: now) : ["(the run now ends before this step)"]
            var change = JSONObjectWriter()
            change.add("seq", seq)
            change.add("now", raw: i < states.count ? json(now, "state") : "null")
            change.add("diff", diff)
            changes.append(change)
        }
        var reply = frame(command)
        if command == "toggle" { reply.add("off", off.sorted()) }
        reply.add("states", states.count)
        reply.add("differs", differs)
        reply.add("changes", changes)
        reply.add("state", raw: states.last.map { json($0, "state") } ?? "null")
        return reply.text
    }

    /// Every state frame's seq and whole state in the window, in order, and how many
    /// state frames of the run came before it. Under the lock.
    private func windowStates() -> ([(Int, LuaValue)], Int) {
        var out: [(Int, LuaValue)] = []
        var state: LuaValue?
        for i in states.indices {
            state = apply(i, to: state)
            guard let state else { break }
            out.append((states[i].seq, state))
        }
        return (out, stateCount - states.count)
    }

    private struct Refused: Error { let reply: String }

    /// The refusal of `rerun` and `toggle` once the actions sent outgrew what is kept of them. Under the lock.
    private func tooManyInputs(_ command: String) -> String? {
        guard inputsDropped > 0 else { return nil }
        return failure(
            command,
            "\(command): this run has sent \(inputsDropped) actions, more than the inspector keeps to send again (a quarter of its bytes limit, \(limits.bytes / 4) bytes)"
        )
    }

    /// `{"event":"inflight","flights":[{"what":"incrementLater #3","seq":7,"ms":120}]}`: the work
    /// in flight, each with the frame of the action that started it and how long ago that was.
    private func inFlightFrame() -> String {
        let flights = lock.withLock { dispatcher }?.inFlight ?? []
        let now = Date()
        return lock.withLock {
            let items = flights.map { flight -> JSONObjectWriter in
                var item = JSONObjectWriter()
                item.add("what", flight.summary)
                if let start = actionFrames.last(where: { $0.action == flight.action }) {
                    item.add("seq", start.seq)
                    item.add("ms", Int(now.timeIntervalSince(start.at) * 1000))
                }
                return item
            }
            var reply = frame("inflight")
            reply.add("flights", items)
            return reply.text
        }
    }

    private func send(_ frame: String, to id: Int) {
        lock.withLock { pages[id]?.send(frame) }
    }

    private func failure(_ cmd: String, _ message: String) -> String {
        var reply = frame("reply")
        reply.add("cmd", cmd)
        reply.add("ok", false)
        reply.add("message", advice(message))
        return reply.text
    }

    /// `{"event":"reply","cmd":CMD,"ok":true}`: the command was done.
    private func done(_ cmd: String) -> String {
        var reply = frame("reply")
        reply.add("cmd", cmd)
        reply.add("ok", true)
        return reply.text
    }

    /// A frame of the inspector's own (not a run's event): `{"event":KIND,...}`.
    private func frame(_ kind: String) -> JSONObjectWriter {
        var frame = JSONObjectWriter()
        frame.add("event", kind)
        return frame
    }

    /// Sends the frames after `since`; the whole window (with the `session` frame first)
    /// when the page holds nothing or `since` is not a frame of the window or just before
    /// it. Under the lock.
    private func resync(_ id: Int, since: Int) {
        guard let page = pages[id] else { return }
        // Compared, never added to: `since` comes from the page and may be any integer (Int.max).
        var from = first
        if since < 0 || since < first - 1 || since >= first + frames.count {
            page.send(sessionFrame)
        } else {
            from = since + 1
        }
        for frame in frames[(from - first)...] { page.send(frame) }
    }

    private var sessionFrame: String {
        var session = frame("session")
        session.add("last", first + frames.count - 1)
        // Once the window has moved: its first frame, and the whole state as it starts.
        session.add("keep", limits.frames)
        if first > 0 {
            session.add("first", first)
            if let base = windowBase {
                var start = JSONObjectWriter()
                start.add("stateSeq", base.seq)
                start.add("step", base.step)
                start.add("state", raw: json(base.state, "state"))
                session.add("base", start)
            }
        }
        guard let run else { return session.text }
        session.add("feature", run.name)
        session.add("version", run.version)
        session.add("path", run.path)
        session.add("clock", run.clock.rawValue)
        if let schema = run.actions {
            var actions = JSONObjectWriter()
            for name in schema.names {
                var fields = JSONObjectWriter()
                for (field, shape) in (schema.shapes[name] ?? [:]).sorted(by: { $0.key < $1.key }) {
                    fields.add(field, shape.type.rawValue + (shape.optional ? "?" : ""))
                }
                actions.add(name, fields)
            }
            session.add("actions", actions)
        } else {
            session.add("actions", raw: "null")
        }
        return session.text
    }

    /// The state as of frame `seq` as JSON (the last state frame at or before it), rebuilt
    /// from the nearest snapshot by applying the patches after it; before the window, the
    /// nearest older snapshot at or before it. Under the lock.
    private func state(at seq: Int) -> (Int, Int, String)? {
        // The last state frame at or before `seq`.
        var lo = 0, hi = states.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if states[mid].seq <= seq { lo = mid + 1 } else { hi = mid }
        }
        guard lo > 0 else {
            if let base = windowBase, base.seq <= seq { return (base.seq, base.step, json(base.state, "state")) }
            return older.last(where: { $0.seq <= seq }).map { ($0.seq, $0.step, $0.json) }
        }
        guard let whole = wholeState(lo - 1) else { return nil }
        return (states[lo - 1].seq, states[lo - 1].step, json(whole, "state"))
    }

    private func json(_ v: LuaValue, _ root: String) -> String { (try? v.json(sortedKeys: true, root: root)) ?? "null" }

    private static func integer(_ v: LuaValue) -> Int? {
        switch v {
        case .integer(let i): return Int(i)
        case .number(let d) where d.rounded() == d && abs(d) < 1e15: return Int(d)
        default: return nil
        }
    }
}

/// A list kept in blocks of a fixed size, so that its storage grows a block at a time and is
/// never copied whole: an array that doubles holds up to twice what it counts, and three times
/// while it grows. What the hub keeps for `rerun` is counted by the blocks it takes.
struct BlockList<Element>: RandomAccessCollection, MutableCollection {
    static var blockSize: Int { 1024 }
    private var blocks: [[Element]] = []
    private(set) var count = 0

    init() {}

    var startIndex: Int { 0 }
    var endIndex: Int { count }

    subscript(position: Int) -> Element {
        get { blocks[position / Self.blockSize][position % Self.blockSize] }
        set { blocks[position / Self.blockSize][position % Self.blockSize] = newValue }
    }

    mutating func append(_ element: Element) {
        if count % Self.blockSize == 0 {
            var block: [Element] = []
            block.reserveCapacity(Self.blockSize)
            blocks.append(block)
        }
        blocks[blocks.count - 1].append(element)
        count += 1
    }

    /// The bytes the blocks take (each one whole, from its first element).
    var storageBytes: Int { blocks.count * Self.blockSize * MemoryLayout<Element>.stride }
}
