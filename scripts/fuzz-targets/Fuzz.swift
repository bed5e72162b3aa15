// libFuzzer targets (built and run by scripts/fuzz). One binary; the target
// is chosen by MOONFLOW_FUZZ_TARGET:
//   jsonl   a JSON Lines input line into an action (JSON, then the schema), and the same
//           bytes parsed straight into Lua: the same value or the same error
//   value   LuaValue into Lua and back: what comes back is what went in
//   chunk   an arbitrary chunk run under the sandbox with small time and memory limits
//   schema  schema declarations and tables validated against them
//   inspector  the inspector's hub fed events and page frames (any text, and commands with
//           any numbers): every frame it sends is a JSON object, its window stays bounded
//   recording  any bytes as a recording for `moonflow replay`: an answer, never a crash
//   names   `moonflow types` output for random state declarations and feature, field, action,
//           mutation and output names: the Swift, --lua and --luals generators never crash, the
//           Lua loads as text, --lua reads back as the state declared, --luals stays comments
import Foundation
import LuaKit
import MoonflowHost
import MoonflowInspector
import MoonflowLua
import MoonflowTesting
import MoonflowTool

/// Reads fuzz bytes as choices.
struct Bytes {
    var data: [UInt8]
    var at = 0
    mutating func byte() -> UInt8 {
        guard at < data.count else { return 0 }
        defer { at += 1 }
        return data[at]
    }
    mutating func int() -> Int64 {
        var v: Int64 = 0
        for _ in 0..<Int(byte() % 9) { v = (v << 8) | Int64(byte()) }
        return byte() & 1 == 0 ? v : 0 &- v   // wrapping: the negation of Int64.min is itself
    }
    mutating func string() -> LuaString {
        let n = Int(byte() % 12)
        return LuaString(bytes: (0..<n).map { _ in byte() })
    }
    /// A name as a plugin may write one: pieces Swift, Lua or a terminal treat specially.
    mutating func name() -> String {
        let pieces = ["a", "B", "z", "_", "-", " ", "0", "9", ".", "\"", "\\", "\\(", ")", "]]", "\n", "\r", "\t", "\u{1B}",
                      "\u{0}", "+", "$", "é", "名", "前", "self", "init", "default", "Type", "end", "--", "[[", "State", "Item", "Level4"]
        return (0..<Int(byte() % 5)).map { _ in pieces[Int(byte()) % pieces.count] }.joined()
    }
    /// A state declaration as a plugin writes it (not always a valid one).
    mutating func declaration(depth: Int = 0) -> LuaValue {
        let scalars = ["string", "integer", "number", "boolean", "table", "any"]
        let optional = byte() % 4 == 0 ? "?" : ""
        switch byte() % (depth > 3 ? 3 : 6) {
        case 0: return .string(LuaString(scalars[Int(byte()) % scalars.count] + optional))
        case 1:
            // A list of lists...: as deep as the bytes say (30 deep once took minutes to type-check).
            var inner = declaration(depth: depth + 1)
            for _ in 0..<Int(byte() % 40) { inner = .table(LuaTable(array: [.string("list")], hash: ["of": inner])) }
            return .table(LuaTable(array: [.string(LuaString("list" + optional))], hash: ["of": inner]))
        case 2:
            var values: [LuaValue] = [.string(LuaString("enum" + optional))]
            for _ in 0..<Int(byte() % 5) { values.append(byte() % 2 == 0 ? .string(LuaString(name())) : .string(string())) }
            return .table(LuaTable(array: values))
        case 3: return .table(LuaTable(array: [.string(LuaString("map" + optional))], hash: ["of": declaration(depth: depth + 1)]))
        default:
            var t = LuaTable(array: optional.isEmpty ? [] : [.string("record?")])
            for _ in 0..<Int(byte() % 5) { t[.string(LuaString(name()))] = declaration(depth: depth + 1) }
            return .table(t)
        }
    }
    /// Messages (actions, mutations or outputs) by name, each with a few fields.
    mutating func messages() -> [String: [String: Schema.Field]] {
        let types: [FlatShapes.FieldType] = [.string, .integer, .number, .boolean, .table, .any]
        var out: [String: [String: Schema.Field]] = [:]
        for _ in 0..<Int(byte() % 4) {
            var fields: [String: Schema.Field] = [:]
            for _ in 0..<Int(byte() % 3) { fields[name()] = .init(type: types[Int(byte()) % types.count], optional: byte() & 1 == 1) }
            out[name()] = fields
        }
        return out
    }
    /// A value tree (depth-limited), with no NaN (NaN is not equal to itself).
    mutating func value(depth: Int = 0) -> LuaValue {
        switch byte() % (depth > 4 ? 5 : 7) {
        case 0: return .nil
        case 1: return .boolean(byte() & 1 == 1)
        case 2: return .integer(int())
        case 3:
            let d = Double(bitPattern: UInt64(bitPattern: int()))
            return .number(d.isNaN ? 0.5 : d)
        case 4: return .string(string())
        default:
            var t = LuaTable()
            for _ in 0..<Int(byte() % 6) {
                let v = value(depth: depth + 1)
                if v != .nil { t.array.append(v) }
            }
            for _ in 0..<Int(byte() % 6) {
                // Integer keys that would extend the sequence belong in `array`: keep them out,
                // so the table is in the one form reading it back gives.
                var n = int()
                if n >= 1 && n <= Int64(t.array.count) + 64 { n = -n }
                let k: LuaValue = byte() & 1 == 0 ? .string(string()) : .integer(n)
                let v = value(depth: depth + 1)
                if v != .nil, t[k] == .nil { t.hash[k] = v }
            }
            return .table(t)
        }
    }
}

enum Target: String { case jsonl, value, chunk, schema, inspector, recording, names }

let target = Target(rawValue: ProcessInfo.processInfo.environment["MOONFLOW_FUZZ_TARGET"] ?? "") ?? {
    FileHandle.standardError.write(Data("set MOONFLOW_FUZZ_TARGET to jsonl, value, chunk, schema, inspector, recording or names\n".utf8))
    exit(2)
}()

let actionSchema = try! Schema(kind: "action", declaration: [
    "query": ["text": "string"], "select": ["id": "integer", "note": "string?"], "clear": [:],
    "load": ["page": "number", "filters": "table?", "flag": "boolean", "extra": "any?"],
])
/// `actionSchema` compiled for the in-place check, as a schema compiles itself.
let actionShapes = FlatShapes([
    "query": ["text": .init(type: .string)], "select": ["id": .init(type: .integer), "note": .init(type: .string, optional: true)],
    "clear": [:], "load": ["page": .init(type: .number), "filters": .init(type: .table, optional: true),
                          "flag": .init(type: .boolean), "extra": .init(type: .any, optional: true)],
])
let valueState = try! LuaState(memoryLimit: 64 << 20)

/// A fresh sandboxed state every so often, so that globals a chunk sets do not pile up.
nonisolated(unsafe) var chunkState: LuaState?
nonisolated(unsafe) var chunkRuns = 0

/// What `rerun` and `toggle` get from running the feature again: a short, fixed run (a real
/// one makes a Lua state per command, which is the recording target's ground, and slow).
let fixedRerun: InspectorHub.Rerun = { _, lines, _ in (0...min(lines.count, 3)).map { ["count": .integer(Int64($0))] } }

/// A hub with a small window, renewed every so often, and the page it sends to.
nonisolated(unsafe) var hub = InspectorHub(limits: .init(frames: 16, bytes: 4096), rerun: fixedRerun)
nonisolated(unsafe) var page = 0
nonisolated(unsafe) var hubRuns = 0
let sentFrame: @Sendable (String) -> Void = { frame in
    guard case .table? = try? LuaValue(json: frame) else { fatalError("the inspector sent a frame that is not a JSON object: \(frame)") }
}
let commands = ["hello", "dispatch", "jump", "resume", "inflight", "toggle", "restart", "rerun", "nope"]

/// Where `recording` writes its input, and the plugins its recordings may name.
let recordingFile = FileManager.default.temporaryDirectory.appendingPathComponent("moonflow-fuzz-\(getpid()).jsonl").path
let pluginsFolder = FileManager.default.currentDirectoryPath + "/plugins"
let devNull = open("/dev/null", O_WRONLY)

/// The state generated Lua is loaded (and --lua run) in, renewed every so often.
nonisolated(unsafe) var namesState: LuaState?
nonisolated(unsafe) var namesRuns = 0

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    switch target {
    case .jsonl:
        let line = String(decoding: bytes, as: UTF8.self)
        if let action = try? LuaValue(json: line) {
            _ = try? actionSchema.validate(action)
            // What parsed must print back to JSON that parses to the same value.
            if let text = try? action.json(), let again = try? LuaValue(json: text), again != action, !text.contains("nan") {
                fatalError("JSON round trip changed \(line) into \(text)")
            }
        }
        // Straight into Lua (what send(json:) does) gives what the Swift reader's value gives
        // once pushed, or the same error; the in-place check never accepts what validation refuses.
        let swift = Result { try LuaValue(jsonBytes: bytes) }
        let straight = Result {
            try bytes.withUnsafeBytes { buffer in
                try valueState.withJSON(buffer) { slots in
                    (try slots.value(1, path: "action"), slots.matches(1, actionShapes))
                }
            }
        }
        switch (swift, straight) {
        case (.success(let parsed), .success(let (read, inPlace))):
            let pushed = try? valueState.value(of: try valueState.ref(.value(parsed)))
            if pushed != read { fatalError("straight into Lua, \(bytes) read as \(read), not \(String(describing: pushed))") }
            if inPlace && (try? actionSchema.validate(read)) == nil { fatalError("the in-place check accepted \(read)") }
        case (.failure(let a), .failure(let b)):
            if "\(a)" != "\(b)", !(b is LuaError) { fatalError("straight into Lua, \(bytes) failed with \(b), not \(a)") }
        case (.success, .failure(let error)):
            if !(error is LuaError) { fatalError("straight into Lua refused \(bytes): \(error)") }
        case (.failure(let error), .success):
            fatalError("straight into Lua read \(bytes), which the Swift reader refuses: \(error)")
        }
    case .value:
        var reader = Bytes(data: bytes)
        let value = reader.value()
        do {
            let ref = try valueState.ref(.value(value))
            let back = try valueState.value(of: ref)
            if back != value { fatalError("LuaValue round trip changed \(value) into \(back)") }
        } catch {
            fatalError("LuaValue \(value) could not cross: \(error)")
        }
    case .chunk:
        if chunkState == nil || chunkRuns % 500 == 0 {
            chunkState = nil
            chunkState = try! LuaState(profile: .sandboxed, memoryLimit: 4 << 20, timeLimitMs: 20)
        }
        chunkRuns += 1
        let source = String(decoding: bytes, as: UTF8.self)
        _ = try? chunkState!.run(string: source, name: "fuzz.lua")
        // The state must stay usable whatever the chunk did (short of filling its memory with globals).
        // A time limit is counted on the thread's CPU clock, with a wall-clock backstop that a
        // machine loaded past reason (a sanitizer build beside other jobs) can still reach: a
        // broken state stops `return 1 + 1` every time, a slow machine not three times in a row.
        var timeouts = 0
        while true {
            do {
                let after = try chunkState!.run(string: "return 1 + 1", name: "after.lua")
                if after != [2] { fatalError("1 + 1 gave \(after) after \(source.debugDescription)") }
            } catch LuaError.memory {
                chunkState = nil
            } catch LuaError.timeout where timeouts < 2 {
                timeouts += 1
                continue
            } catch {
                fatalError("the state is unusable after \(source.debugDescription): \(error)")
            }
            break
        }
    case .schema:
        var reader = Bytes(data: bytes)
        let declaration = reader.value()
        let value = reader.value()
        if let schema = try? Schema(kind: "action", declaration: declaration) {
            _ = try? schema.validate(value)
        }
        _ = try? actionSchema.validate(value)
    case .inspector:
        if hubRuns % 200 == 0 {
            hub = InspectorHub(limits: .init(frames: 16, bytes: 4096), rerun: fixedRerun)
            page = hub.connect(send: sentFrame)
        }
        hubRuns += 1
        var reader = Bytes(data: bytes)
        var t = 0
        while reader.at < reader.data.count {
            t &+= Int(reader.byte())
            switch reader.byte() % 7 {
            case 0: hub.observe(.state(reader.value(), seq: Int(reader.int())), t: t, cause: nil)
            case 1:
                let action = reader.value()
                hub.input(action, t: t)
                hub.observe(.action(action), t: t, cause: action, causeID: String(reader.byte()))
                // A service answer as the run hands it over, any text (rerun parses it).
                if reader.byte() & 3 == 0 { hub.answered(reader.string().description) }
            case 2: hub.observe(.mutation(reader.value(), seq: Int(reader.int())), t: t, cause: reader.byte() & 1 == 0 ? nil : reader.value(),
                                causeID: reader.byte() & 1 == 0 ? nil : String(reader.byte()))
            case 3: hub.observe(.error(message: reader.string().description, location: nil), t: Int(reader.int()), cause: nil)
            case 4:
                // A command with any number, as a page could send it.
                let cmd = commands[Int(reader.byte()) % commands.count]
                let n = reader.int()
                hub.receive("{\"cmd\":\"\(cmd)\",\"since\":\(n),\"seq\":\(n),\"action\":{\"type\":\"x\"}}", from: page)
            case 5:
                let n = Int(reader.byte() % 64)
                let text = String(decoding: (0..<n).map { _ in reader.byte() }, as: UTF8.self)
                hub.receive(text, from: page)
            default:
                hub.disconnect(page)
                page = hub.connect(send: sentFrame)
            }
        }
        let kept = hub.kept
        if kept.frames > hub.limits.frames { fatalError("the inspector keeps \(kept.frames) frames, more than \(hub.limits.frames)") }
    case .recording:
        _ = FileManager.default.createFile(atPath: recordingFile, contents: Data(bytes))
        var replay = SessionReplay(file: recordingFile)
        replay.pluginsFolder = pluginsFolder
        replay.timeLimitMs = 200
        replay.memoryLimitMB = 64
        replay.write = { _ in }
        // What replay says about a bad recording goes to standard error: not into the fuzz log.
        let stderr = dup(2)
        dup2(devNull, 2)
        let status = replay.run()
        dup2(stderr, 2)
        close(stderr)
        if !(0...2).contains(status) { fatalError("replay answered \(status) for \(bytes)") }
    case .names:
        if namesState == nil || namesRuns % 1000 == 0 {
            namesState = nil
            namesState = try! LuaState(memoryLimit: 64 << 20)
        }
        namesRuns += 1
        let lua = namesState!
        var reader = Bytes(data: bytes)
        var features: [FeatureDeclarations] = []
        for _ in 0..<(1 + Int(reader.byte() % 3)) {
            let declared = reader.declaration()
            guard let state = try? SchemaType.read(declared, at: "state") else { continue }
            features.append(FeatureDeclarations(name: reader.name(), kind: .feature, state: state, stateIsInferred: reader.byte() & 1 == 1,
                                                actions: reader.messages(), mutations: reader.messages(),
                                                outputs: reader.byte() & 1 == 1 ? reader.messages() : nil, file: reader.name()))
        }
        guard !features.isEmpty else { return 0 }
        let command = "moonflow types " + reader.name()
        _ = SwiftTypesGenerator(features: features, command: command).source()
        // --lua: each feature's `state = ...` reads back, as Lua, to the declaration it came from.
        for feature in features {
            let source = "return {\n" + LuaStateDeclaration(features: [feature]).source() + "}\n"
            let back: [LuaValue]
            do { back = try lua.run(string: source, name: "types.lua") } catch LuaError.memory { namesState = nil; return 0 } catch {
                fatalError("types --lua wrote Lua that does not run (\(error)):\n\(source)")
            }
            guard let table = back.first, let again = try? SchemaType.read(table["state"] ?? .nil, at: "state"), again == feature.state else {
                fatalError("types --lua wrote a state that reads back as \(back) for \(feature.state):\n\(source)")
            }
        }
        // --luals: comments only, whatever the names hold.
        let luals = LuaLSAnnotations(features: features, command: command).source()
        for line in luals.split(separator: "\n", omittingEmptySubsequences: false) where !line.isEmpty && !line.hasPrefix("--") {
            fatalError("types --luals wrote a line that is not a comment: \(line.debugDescription)")
        }
        do { _ = try lua.load(string: luals, name: "meta.lua") } catch LuaError.memory { namesState = nil } catch {
            fatalError("types --luals wrote Lua that does not load (\(error)):\n\(luals)")
        }
    }
    return 0
}
