import Foundation
import LuaKit
import MoonflowHost
import MoonflowLua

/// The inspector's protocol, apart from the network: it numbers the run's
/// events into frames, links each to the action that caused it, keeps them
/// for pages that connect late, and answers the pages' commands.
///
///     let hub = InspectorHub()
///     options.observers.append(hub)                 // FeatureRun feeds it
///     let page = hub.connect { frame in socket.send(frame) }
///     hub.receive(#"{"cmd":"hello","since":41}"#, from: page)
///
/// Frames are JSON objects, one per WebSocket text message (README, "The
/// inspector's protocol"): a `session` frame, then the run's jsonl events, each
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

    private struct Page {
        let send: @Sendable (String) -> Void
        /// Between `jump` and `resume`: the page looks at the past, its dispatches wait.
        var travelling = false
        var queued: [LuaValue] = []
        var received = 0
        /// The action frames toggled off (`toggle`).
        var off: Set<Int> = []
    }

    private let lock = NSLock()
    private var frames: [String] = []
    private var run: RunDescription?
    private var dispatcher: (any RunDispatcher)?
    private var pages: [Int: Page] = [:]
    private var nextPage = 0
    private let printer = EventPrinter(format: .jsonl)
    /// The state frames' seqs in order, their patches, and whole states every `snapshotEvery`.
    private var stateSeqs: [Int] = []
    private var stateSteps: [Int] = []
    private var patches: [Int: [JSONPatch.Operation]] = [:]
    private var snapshots: [Int: LuaValue] = [:]
    private var lastState: LuaValue?
    /// Every action sent, with its time on the run's clock (for `rerun`).
    /// Each is linked to its action frame when that arrives (`frame`), for `toggle`.
    private var inputs: [(action: LuaValue, t: Int, frame: Int?)] = []
    private var unlinkedInput = 0
    /// Recent action frames, for `cause`.
    private var actionFrames: [(action: LuaValue, seq: Int, at: Date)] = []

    public init() {}

    // MARK: - RunObserver

    public func started(_ run: RunDescription, dispatch: any RunDispatcher) {
        lock.withLock {
            self.run = run
            dispatcher = dispatch
            for page in pages.values { page.send(sessionFrame) }
        }
    }

    public func observe(_ event: FeatureEvent, t: Int, cause: LuaValue?) {
        lock.withLock {
            let seq = frames.count
            var fields = "\"seq\":\(seq)"
            if let cause, let from = actionFrames.last(where: { $0.action == cause }) {
                let json = (try? cause.json(sortedKeys: true, root: "cause")) ?? "{}"
                fields += ",\"cause\":{\"seq\":\(from.seq),\"action\":\(json)}"
            }
            let frame: String
            switch event {
            case .state(let state, let step):
                frame = stateFrame(state, step: step, seq: seq, t: t, fields: fields)
            default:
                if case .action(let action) = event {
                    actionFrames.append((action, seq, Date()))
                    // The oldest input not yet handled that is this action.
                    if let i = inputs[unlinkedInput...].firstIndex(where: { $0.frame == nil && $0.action == action }) {
                        inputs[i].frame = seq
                        while unlinkedInput < inputs.count, inputs[unlinkedInput].frame != nil { unlinkedInput += 1 }
                    }
                    if actionFrames.count > 4096 { actionFrames.removeFirst(2048) }
                }
                var line = printer.render(event, t: t)
                // A mutation's jsonl `seq` (reduced mutations so far) is `step` here: `seq` numbers frames.
                if case .mutation = event, let r = line.range(of: ",\"seq\":") { line.replaceSubrange(r, with: ",\"step\":") }
                frame = "{" + fields + "," + line.dropFirst()
            }
            frames.append(frame)
            for page in pages.values { page.send(frame) }
        }
    }

    public func input(_ action: LuaValue, t: Int) {
        lock.withLock { inputs.append((action, t, nil)) }
    }

    /// A `state` frame: the whole state the first time, then a patch against the last one.
    private func stateFrame(_ state: LuaValue, step: Int, seq: Int, t: Int, fields: String) -> String {
        defer { lastState = state }
        let head = "{\(fields),\"event\":\"state\",\"t\":\(t),\"step\":\(step)"
        let index = stateSeqs.count
        stateSeqs.append(seq)
        stateSteps.append(step)
        if let last = lastState, let ops = JSONPatch.patch(from: last, to: state) {
            patches[seq] = ops
            if index % InspectorHub.snapshotEvery == 0 { snapshots[seq] = state }
            return head + ",\"patch\":\((try? JSONPatch.json(ops)) ?? "[]")}"
        }
        snapshots[seq] = state
        return head + ",\"state\":\(json(state, "state"))}"
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

    /// The number of frames so far.
    public var frameCount: Int { lock.withLock { frames.count } }

    /// Handles one frame a page sent. A bad frame gets a `reply` with `ok: false`
    /// saying what to send instead; the run goes on.
    public func receive(_ text: String, from id: Int) {
        var toDispatch: [LuaValue] = []
        var command = "?"
        let reply: String? = lock.withLock {
            guard pages[id] != nil else { return nil }
            pages[id]!.received += 1
            let n = pages[id]!.received
            let message: LuaValue
            do { message = try LuaValue(json: text) } catch {
                return failure("?", "frame \(n) from the page is not JSON (\(error)); send an object such as {\"cmd\":\"hello\",\"since\":-1}")
            }
            guard case .string(let name)? = message["cmd"] else {
                return failure("?", "frame \(n) from the page has no string \"cmd\"; the commands are \(InspectorHub.commands)")
            }
            command = name.description
            switch command {
            case "hello":
                guard let since = message["since"].flatMap(InspectorHub.integer) ?? (message["since"] == nil ? -1 : nil) else {
                    return failure(command, "hello: \"since\" must be the seq of the last frame the page holds (an integer), or -1 for everything")
                }
                resync(id, since: since)
                return nil
            case "dispatch":
                guard let action = message["action"], case .table = action else {
                    return failure(command, "dispatch: \"action\" must be an action object, such as {\"type\":\"increment\"}")
                }
                if pages[id]!.travelling {
                    pages[id]!.queued.append(action)
                    return "{\"event\":\"reply\",\"cmd\":\"dispatch\",\"ok\":true,\"queued\":\(pages[id]!.queued.count)}"
                }
                toDispatch = [action]
                return nil
            case "jump":
                guard let seq = message["seq"].flatMap(InspectorHub.integer), seq >= 0, seq < frames.count else {
                    return failure(command, "jump: \"seq\" must be the seq of a frame, 0 to \(frames.count - 1)")
                }
                guard let (stateSeq, step, state) = state(at: seq) else {
                    return failure(command, "jump: no state before frame \(seq)")
                }
                pages[id]!.travelling = true
                return "{\"event\":\"jump\",\"seq\":\(seq),\"stateSeq\":\(stateSeq),\"step\":\(step),\"state\":\(json(state, "state"))}"
            case "inflight", "rerun", "restart":
                return nil
            case "toggle":
                guard let seq = message["seq"].flatMap(InspectorHub.integer), inputs.contains(where: { $0.frame == seq }) else {
                    return failure(command, "toggle: \"seq\" must be the seq of an action frame the run was sent")
                }
                if pages[id]!.off.remove(seq) == nil { pages[id]!.off.insert(seq) }
                return nil
            case "resume":
                toDispatch = pages[id]!.queued
                pages[id]!.queued = []
                pages[id]!.travelling = false
                let state = lastState.map { json($0, "state") } ?? "null"
                return "{\"event\":\"resume\",\"seq\":\(frames.count - 1),\"sent\":\(toDispatch.count),\"state\":\(state)}"
            default:
                return failure(command, "unknown cmd \"\(LuaValue.escaped(command))\"; the commands are \(InspectorHub.commands)")
            }
        }
        if let reply { send(reply, to: id) }
        if command == "inflight" { send(inFlightFrame(), to: id) }
        if command == "restart" {
            // The `reload` event and the fresh state come back as frames; the reply says it was done.
            do {
                guard let dispatcher = lock.withLock({ dispatcher }) else {
                    throw HostError("the feature has not loaded yet; send again once the session frame arrived")
                }
                try dispatcher.restart()
                send("{\"event\":\"reply\",\"cmd\":\"restart\",\"ok\":true}", to: id)
            } catch {
                send(failure(command, "restart: \(error)"), to: id)
            }
        }
        if command == "rerun" || command == "toggle" {
            // A whole run on the virtual clock: off the connection's thread, answered when done.
            let off = command == "toggle" ? lock.withLock { pages[id]?.off ?? [] } : []
            DispatchQueue.global().async { [self, command] in send(rerunFrame(command, skipping: off), to: id) }
        }
        // Outside the lock: the feature's events come back through `observe`.
        for action in toDispatch {
            do {
                guard let dispatcher = lock.withLock({ dispatcher }) else {
                    throw HostError("the feature has not loaded yet; send again once the session frame arrived")
                }
                try dispatcher.dispatch(action)
                if command == "dispatch" { send("{\"event\":\"reply\",\"cmd\":\"dispatch\",\"ok\":true}", to: id) }
            } catch {
                send(failure(command, "\(command): \(error)"), to: id)
            }
        }
    }

    static let commands = "hello (since), dispatch (action), jump (seq), resume, inflight, rerun, toggle (seq), restart"

    /// `{"event":"rerun","states":N,"differs":[SEQ,...],"state":{...}}`: every recorded action
    /// but those of the action frames in `skipping`, sent again at its time to the plugin's
    /// code as it is now (after a reload, say), on the virtual clock in a host of its own
    /// (declared repositories in memory): the `seq` of each state frame whose state is not
    /// what this run gives at that step, and its last state. `toggle` answers the same,
    /// with `"off"`: the action frames left out.
    private func rerunFrame(_ command: String, skipping off: Set<Int>) -> String {
        guard let (run, inputs, recorded) = lock.withLock({ () -> (RunDescription, [(action: LuaValue, t: Int, frame: Int?)], [(Int, LuaValue)])? in
            guard let run else { return nil }
            return (run, inputs, allStates())
        }) else { return failure(command, "\(command): the feature has not loaded yet") }
        var options = FeatureRun.Options(path: run.path)
        options.clock = .virtual
        options.format = .jsonl
        options.repositoryStorage = .inMemoryRepositories
        var lines = inputs.filter { $0.frame.map { !off.contains($0) } ?? true }.map { input -> String in
            "{\"at\":\(input.t),\"send\":\((try? input.action.json(sortedKeys: true, root: "action")) ?? "{}")}"
        }.makeIterator()
        let now = PrintedStates()
        _ = FeatureRun(options: options, input: InputLines(interactive: false, name: command) { lines.next() }, write: now.add).run()
        let states = now.all
        var differs: [Int] = []
        // For the first differing steps, what the code gives now and the diff, as `moonflow replay` prints it.
        var changes: [String] = []
        for (i, (seq, state)) in recorded.enumerated() where i >= states.count || states[i] != state {
            differs.append(seq)
            guard changes.count < InspectorHub.rerunDetails else { continue }
            let now = i < states.count ? states[i] : LuaValue.nil
            let diff = i < states.count ? StateDiff.lines(expected: state, actual: now) : ["(the run now ends before this step)"]
            let lines = diff.map { q($0) }.joined(separator: ",")
            changes.append("{\"seq\":\(seq),\"now\":\(i < states.count ? json(now, "state") : "null"),\"diff\":[\(lines)]}")
        }
        let last = states.last.map { json($0, "state") } ?? "null"
        let offList = command == "toggle" ? ",\"off\":[\(off.sorted().map(String.init).joined(separator: ","))]" : ""
        return "{\"event\":\"\(command)\"\(offList),\"states\":\(states.count),\"differs\":[\(differs.map(String.init).joined(separator: ","))],\"changes\":[\(changes.joined(separator: ","))],\"state\":\(last)}"
    }

    /// Every state frame's seq and whole state, in order. Under the lock.
    private func allStates() -> [(Int, LuaValue)] {
        var out: [(Int, LuaValue)] = []
        var state: LuaValue = .nil
        for seq in stateSeqs {
            if let whole = snapshots[seq] { state = whole } else if let next = JSONPatch.apply(patches[seq] ?? [], to: state) { state = next }
            out.append((seq, state))
        }
        return out
    }

    /// `{"event":"inflight","flights":[{"what":"incrementLater #3","seq":7,"ms":120}]}`: the work
    /// in flight, each with the frame of the action that started it and how long ago that was.
    private func inFlightFrame() -> String {
        let flights = lock.withLock { dispatcher }?.inFlight ?? []
        let now = Date()
        return lock.withLock {
            let items = flights.map { flight -> String in
                let what = q(flight.summary)
                guard let start = actionFrames.last(where: { $0.action == flight.action }) else { return "{\"what\":\(what)}" }
                return "{\"what\":\(what),\"seq\":\(start.seq),\"ms\":\(Int(now.timeIntervalSince(start.at) * 1000))}"
            }
            return "{\"event\":\"inflight\",\"flights\":[\(items.joined(separator: ","))]}"
        }
    }

    private func send(_ frame: String, to id: Int) {
        lock.withLock { pages[id]?.send(frame) }
    }

    private func failure(_ cmd: String, _ message: String) -> String {
        return "{\"event\":\"reply\",\"cmd\":\(q(cmd)),\"ok\":false,\"message\":\(q(message))}"
    }

    /// Sends the frames after `since`; everything (with the `session` frame first) when
    /// the page holds nothing or `since` is not a frame this run sent. Under the lock.
    private func resync(_ id: Int, since: Int) {
        guard let page = pages[id] else { return }
        // Checked before adding: `since` comes from the page and may be any integer (Int.max).
        var from = 0
        if since < 0 || since >= frames.count { page.send(sessionFrame) } else { from = since + 1 }
        for frame in frames[from...] { page.send(frame) }
    }

    private var sessionFrame: String {
        guard let run else { return "{\"event\":\"session\",\"last\":\(frames.count - 1)}" }
        var actions = "null"
        if let schema = run.actions {
            actions = "{" + schema.names.map { name in
                let fields = (schema.shapes[name] ?? [:]).sorted { $0.key < $1.key }
                    .map { "\(q($0.key)):\(q($0.value.type.rawValue + ($0.value.optional ? "?" : "")))" }
                return "\(q(name)):{\(fields.joined(separator: ","))}"
            }.joined(separator: ",") + "}"
        }
        return "{\"event\":\"session\",\"last\":\(frames.count - 1),\"feature\":\(q(run.name)),\"version\":\(run.version),"
            + "\"path\":\(q(run.path)),\"clock\":\(q(run.clock.rawValue)),\"actions\":\(actions)}"
    }

    /// The state as of frame `seq` (the last state frame at or before it), rebuilt from
    /// the nearest snapshot by applying the patches after it. Under the lock.
    private func state(at seq: Int) -> (Int, Int, LuaValue)? {
        // The last state frame at or before `seq`.
        var lo = 0, hi = stateSeqs.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if stateSeqs[mid] <= seq { lo = mid + 1 } else { hi = mid }
        }
        guard lo > 0 else { return nil }
        let index = lo - 1
        var base = index
        while snapshots[stateSeqs[base]] == nil { base -= 1 }
        var state = snapshots[stateSeqs[base]]!
        for i in stride(from: base + 1, through: index, by: 1) {
            guard let next = JSONPatch.apply(patches[stateSeqs[i]] ?? [], to: state) else { return nil }
            state = next
        }
        return (stateSeqs[index], stateSteps[index], state)
    }

    /// A string as JSON.
    private func q(_ s: String) -> String { (try? LuaValue.string(LuaString(s)).json()) ?? "\"\"" }

    private func json(_ v: LuaValue, _ root: String) -> String { (try? v.json(sortedKeys: true, root: root)) ?? "null" }

    private static func integer(_ v: LuaValue) -> Int? {
        switch v {
        case .integer(let i): return Int(i)
        case .number(let d) where d.rounded() == d && abs(d) < 1e15: return Int(d)
        default: return nil
        }
    }
}
