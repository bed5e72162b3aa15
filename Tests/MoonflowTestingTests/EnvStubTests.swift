import Foundation
import MoonflowTesting
import Testing

/// A Swift test store stubs what a feature reads through `env` (the time, ids, random
/// numbers) and sets its seed, as the Lua test store's `opts.env` and `opts.seed` do.
@Suite struct EnvStubTests {
    /// A note taker: `add` stamps a note with an id, the time and a colour drawn from 1...4.
    static let notes = """
        local mf = require "moonflow"
        return mf.feature {
          name = "notes",
          initial = { notes = mf.array(), roll = 0 },
          actions = { add = { text = "string" }, roll = {} },
          mutations = {
            added = { id = "string", text = "string", at = "integer", colour = "integer" },
            rolled = { x = "number" },
          },
          handle = function(action, state, env)
            if action.type == "roll" then return { type = "rolled", x = env.random() } end
            return { type = "added", id = env.uuid(), text = action.text, at = env.now(), colour = env.random(4) }
          end,
          reduce = function(state, m)
            if m.type == "rolled" then state.roll = m.x; return state end
            state.notes[#state.notes + 1] = { id = m.id, text = m.text, at = m.at, colour = m.colour }
            return state
          end,
        }
        """

    struct Note: Codable, Equatable, Sendable {
        var id: String
        var text: String
        var at: Int
        var colour: Int
    }

    struct NotesState: Codable, Equatable, Sendable {
        var notes: [Note]
        var roll: Double
    }

    enum NotesAction: Encodable, Sendable {
        case add(text: String)
        case roll
    }

    /// A folder holding the notes plugin, removed by the caller.
    static func plugins() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("envstub-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: dir.appendingPathComponent("notes"), withIntermediateDirectories: true)
        try notes.write(to: dir.appendingPathComponent("notes/init.lua"), atomically: true, encoding: .utf8)
        return dir
    }

    @Test func theStubsAnswerEnvAndTheStateHoldsWhatTheyGave() async throws {
        let dir = try Self.plugins()
        defer { try? FileManager.default.removeItem(at: dir) }
        let ids = Counter()
        let store = try TypedFeatureStore<NotesState, NotesAction>(
            "notes", searchPaths: [dir.path],
            env: EnvStub(now: { 1_800_000_000_000 }, uuid: { "note-\(ids.next())" }, random: { 0.6 }))
        try await store.send(.add(text: "milk")) {
            $0.notes = [Note(id: "note-1", text: "milk", at: 1_800_000_000_000, colour: 3)]
        }
        try await store.send(.add(text: "tea")) {
            $0.notes.append(Note(id: "note-2", text: "tea", at: 1_800_000_000_000, colour: 3))
        }
        try await store.send(.roll) { $0.roll = 0.6 }
        try await store.finish()
    }

    @Test func unstubbedTheyFollowTheVirtualClockAndTheSeed() async throws {
        let dir = try Self.plugins()
        defer { try? FileManager.default.removeItem(at: dir) }
        func firstNote(seed: Int64?) async throws -> Note {
            let store = try TypedFeatureStore<NotesState, NotesAction>(
                "notes", searchPaths: [dir.path], exhaustive: false, env: EnvStub(seed: seed))
            await store.advance(by: 2_000)
            try await store.send(.add(text: "milk"))
            return try store.state.notes[0]
        }
        let a = try await firstNote(seed: 7), b = try await firstNote(seed: 7), c = try await firstNote(seed: 8)
        // 2026-01-01T00:00:00Z on the virtual clock, 2 s in.
        #expect(a.at == 1_767_225_602_000)
        #expect(a == b, "the same seed draws the same id and colour")
        #expect(a.id != c.id, "another seed draws another id")
    }

    @Test func aRandomStubOutsideZeroToOneFailsNamingIt() async throws {
        let dir = try Self.plugins()
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try TypedFeatureStore<NotesState, NotesAction>(
            "notes", searchPaths: [dir.path], exhaustive: false, env: EnvStub(random: { 1.5 }))
        let failure = await #expect(throws: FeatureStore.Failure.self) {
            try await store.send(.roll) { $0.roll = 1.5 }
        }
        #expect(failure?.message.contains("EnvStub.random returned 1.5: give a number in [0, 1)") == true)
    }
}

/// Ids handed out in order, from a stub called on the store's thread.
private final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var n = 0
    func next() -> Int {
        lock.withLock {
            n += 1; return n
        }
    }
}
