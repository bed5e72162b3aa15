import Foundation
import LuaKit
import MoonflowHost
import MoonflowHostTools
import MoonflowRepositories
import MoonflowTesting
import MoonflowSQLite
import XCTest

/// The types `moonflow types --swift` generated for the example plugins (`Generated/`) against
/// the plugins themselves: their real states decode through the state structs, actions go
/// in through the action enums with `send(case:)`, and outward effects and mutations decode
/// through their enums.
final class GeneratedTypesTests: XCTestCase {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// A host on the virtual clock over `plugins/`, with the users' SQLite table in memory.
    private func host() throws -> FeatureHost {
        var configuration = FeatureHost.Configuration(
            searchPaths: [Self.root.appendingPathComponent("plugins").path], clock: .virtual)
        configuration.repositoryFiles = SQLiteRepositoryFiles(storage: .inMemory)
        return try FeatureHost(configuration: configuration)
    }

    /// Outward effects and mutations as they come, decoded when read.
    final class Events: @unchecked Sendable {
        private let lock = NSLock()
        private var effects: [LuaValue] = []
        private var mutations: [LuaValue] = []
        private var token: ObservationToken?

        init(_ feature: RunningFeature) {
            token = feature.observe(kinds: [.effect, .mutation]) { [weak self] event in
                guard let self else { return }
                self.lock.lock(); defer { self.lock.unlock() }
                switch event {
                case .effect(let e, _): self.effects.append(e)
                case .mutation(let m, _): self.mutations.append(m)
                default: break
                }
            }
        }

        func effects<E: Decodable>(as type: E.Type) throws -> [E] {
            try lock.withLock { effects }.map { try LuaValueDecoder().decode(E.self, from: $0) }
        }

        func mutations<M: Decodable>(as type: M.Type) throws -> [M] {
            try lock.withLock { mutations }.map { try LuaValueDecoder().decode(M.self, from: $0) }
        }
    }

    func testCounterActionsGoInAndItsStateMutationsAndMilestoneComeOutTyped() throws {
        let host = try host()
        let counter = try host.load("counter")
        let events = Events(counter)
        counter.start()
        XCTAssertEqual(try counter.decodeState(CounterState.self), CounterState(count: 0))
        try counter.send(case: CounterAction.increment(by: 9))
        try counter.send(case: CounterAction.incrementLater(ms: 50))
        _ = host.runUntilIdle()
        try counter.send(case: CounterAction.increment())
        try counter.send(case: CounterAction.decrement)
        _ = host.runUntilIdle()
        XCTAssertEqual(try counter.decodeState(CounterState.self), CounterState(count: 10))
        XCTAssertEqual(
            try events.effects(as: CounterEffect.self), [.milestone(count: 10), .milestone(count: 10)],
            "9 + 1 later reaches ten; + 1 - 1 comes back to it")
        XCTAssertEqual(
            try events.mutations(as: CounterMutation.self),
            [.add(n: 9), .add(n: 1), .add(n: 1), .add(n: -1)])
        try counter.send(case: CounterAction.reset)
        _ = host.runUntilIdle()
        XCTAssertEqual(try counter.decodeState(CounterState.self).count, 0)
    }

    /// A Swift test in the generated types, with TestStore's exhaustive semantics: typed
    /// sends, the expected change made to the state struct, mutations and effects as enums.
    func testATypedStoreAssertsInTheGeneratedTypes() async throws {
        let plugins = Self.root.appendingPathComponent("plugins").path
        let store = try TypedFeatureStore<CounterState, CounterAction>("counter", searchPaths: [plugins])
        try await store.send(.increment(by: 9)) { $0.count = 9 }
        try await store.send(.incrementLater(ms: 50))
        await store.advance(by: 50)
        try await store.receive(CounterMutation.add(n: 1)) { $0.count = 10 }
        try await store.receiveEffect(CounterEffect.milestone(count: 10))
        XCTAssertEqual(try store.state, CounterState(count: 10))
        try await store.finish()

        // A wrong expected change fails at its line, naming the field; a wrong mutation names both.
        let failing = try TypedFeatureStore<CounterState, CounterAction>("counter", searchPaths: [plugins])
        var error = await failure { try await failing.send(.increment(by: 2)) { $0.count = 3 } }
        XCTAssertTrue(error.contains("GeneratedTypesTests.swift:\(#line - 1):") && error.contains("count"), error)
        try await failing.send(.incrementLater(ms: 10))
        await failing.advance(by: 10)
        error = await failure { try await failing.receive(CounterMutation.set(value: 1)) }
        XCTAssertTrue(error.contains("receive(set(value: 1))") && error.contains("add"), error)
    }

    /// What a step threw, as text ("no failure" when it did not).
    private func failure(_ body: () async throws -> Void) async -> String {
        do { try await body() } catch { return "\(error)" }
        return "no failure"
    }

    func testAnActionEncodesAsTheRuntimeReadsIt() throws {
        XCTAssertEqual(
            try LuaValueEncoder.actionFromEnumCase(CounterAction.increment(by: 2)), ["type": "increment", "by": 2])
        XCTAssertEqual(try LuaValueEncoder.actionFromEnumCase(CounterAction.increment()), ["type": "increment"])
        XCTAssertEqual(try LuaValueEncoder.actionFromEnumCase(CounterAction.reset), ["type": "reset"])
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        XCTAssertEqual(
            String(decoding: try encoder.encode(CounterAction.incrementLater(ms: 50)), as: UTF8.self),
            #"{"ms":50,"type":"incrementLater"}"#)
    }

    func testRecordsDecodeIntoNestedStructsAndAFailureIntoTheOptionalError() throws {
        let host = try host()
        let records = try host.load("records")
        records.start()
        try records.send(case: RecordsAction.reload())
        _ = host.runUntilIdle()
        let loaded = try records.decodeState(RecordsState.self)
        XCTAssertEqual(loaded.records.first, RecordsState.RecordsItem(id: 1, title: "Buy milk", done: false))
        XCTAssertEqual(loaded.records.count, 3)
        XCTAssertFalse(loaded.isLoading)
        XCTAssertNil(loaded.error)
        try records.send(case: RecordsAction.reload(fail: true))
        _ = host.runUntilIdle()
        let failed = try records.decodeState(RecordsState.self)
        XCTAssertEqual(failed.error, "gateway unavailable")
        XCTAssertEqual(failed.records.count, 3, "the records stay")
    }

    func testSearchAndColorsStatesDecodeOverTheirLife() throws {
        let host = try host()
        let search = try host.load("search")
        search.start()
        try search.send(case: SearchAction.query(text: "ap"))
        _ = host.runUntilIdle()
        XCTAssertEqual(
            try search.decodeState(SearchState.self),
            SearchState(query: "ap", items: ["apple", "apricot", "grape", "papaya"], loading: false))
        try search.send(case: SearchAction.query(text: "fail"))
        _ = host.runUntilIdle()
        XCTAssertEqual(try search.decodeState(SearchState.self).error, "search service unavailable")

        let colors = try host.load("colors")
        colors.start()
        try colors.send(case: ColorsAction.more)
        _ = host.runUntilIdle()
        try colors.send(case: ColorsAction.more)
        _ = host.runUntilIdle()
        let state = try colors.decodeState(ColorsState.self)
        XCTAssertEqual(state.page, 2)
        XCTAssertEqual(state.items, ["red", "orange", "yellow", "green", "blue", "indigo"])
        XCTAssertTrue(state.hasMore)
        try colors.send(case: ColorsAction.page(n: 9))
        _ = host.runUntilIdle()
        XCTAssertNotNil(try colors.decodeState(ColorsState.self).error)
    }

    /// A struct written by hand with a typo decodes nothing; the generated one decodes the state.
    func testAMisspelledFieldFailsWhereTheGeneratedStructDecodes() throws {
        struct HandWritten: Decodable {
            let page: Int
            let items: [String]
            let hasMroe: Bool
        }
        let host = try host()
        let colors = try host.load("colors")
        colors.start()
        XCTAssertEqual(
            try colors.decodeState(ColorsState.self), ColorsState(page: 0, items: [], hasMore: true, loading: false))
        XCTAssertThrowsError(try colors.decodeState(HandWritten.self)) { error in
            guard case DecodingError.keyNotFound(let key, let context) = error else {
                return XCTFail("not keyNotFound: \(error)")
            }
            XCTAssertEqual(key.stringValue, "hasMroe")
            XCTAssertTrue(context.debugDescription.contains(#"did you mean "hasMore"?"#), context.debugDescription)
        }
    }

    /// A view model over a hand-written struct that stops fitting says where, and the fix.
    @MainActor
    func testAViewModelOverAStructThatStopsFittingNamesThePlaceAndTheFix() throws {
        struct HandWritten: Decodable, Sendable { let page: Int; let error: Int? }  // error is a string
        let host = try host()
        let colors = try host.load("colors")
        let model = try FeatureViewModel(colors, as: HandWritten.self, actions: LuaValue.self)
        colors.start()
        try colors.send(case: ColorsAction.page(n: 9))
        _ = host.runUntilIdle()
        let message = model.decodingError ?? ""
        XCTAssertTrue(message.hasPrefix("the state does not decode into HandWritten: state.error: "), message)
        XCTAssertTrue(message.contains("moonflow types --swift"), message)
    }

    func testAComposeStateAndAChildsOutwardEffectDecode() throws {
        let host = try host()
        let user = try host.load("user")
        let events = Events(user)
        user.start()
        XCTAssertEqual(try user.decodeState(UserState.self), UserState(name: "", bio: "", titles: [], loading: false))
        try user.send(["type": "loadProfile", "userId": 1])
        try user.send(["type": "loadPosts", "userId": 1])
        _ = host.runUntilIdle()
        try user.send(["type": "selectPost", "id": 11])
        _ = host.runUntilIdle()
        XCTAssertEqual(
            try user.decodeState(UserState.self),
            UserState(
                name: "Ada Lovelace", bio: "Wrote the first program.",
                titles: ["Notes on the Analytical Engine", "On Bernoulli numbers"], loading: false))
        XCTAssertEqual(
            try events.effects(as: PostsEffect.self), [.openPost(id: 11)], "the compose's `from` is not in the way")
        try user.send(["type": "loadProfile", "userId": 7])
        _ = host.runUntilIdle()
        XCTAssertEqual(try user.decodeState(UserState.self).error, "no user 7")
    }

    func testSignupFoldsItsFieldsIntoTheDeclaredRecordAndSignsUp() throws {
        let host = try host()
        let signup = try host.load("signup")
        let events = Events(signup)
        signup.start()
        for (field, value) in [("name", "Ada"), ("email", "ada@example.com"), ("password", "short")] {
            try signup.send(["type": "edit", "field": .string(LuaString(field)), "value": .string(LuaString(value))])
        }
        _ = host.runUntilIdle()
        var state = try signup.decodeState(SignupState.self)
        XCTAssertEqual(
            state.fields.password,
            SignupState.Fields.Password(value: "short", valid: false, problem: "use at least 8 characters"))
        XCTAssertFalse(state.submitEnabled)
        try signup.send(["type": "edit", "field": "password", "value": "long enough"])
        _ = host.runUntilIdle()
        XCTAssertTrue(try signup.decodeState(SignupState.self).submitEnabled)
        try signup.send(["type": "submit"])
        _ = host.runUntilIdle()
        state = try signup.decodeState(SignupState.self)
        XCTAssertTrue(state.submitted)
        XCTAssertEqual(try events.effects(as: FormEffect.self), [.signedUp(name: "Ada", email: "ada@example.com")])
    }

    func testUsersDecodeWithTheSelectionThatIsFalseOrAUser() throws {
        let host = try host()
        let users = try host.load("users")
        users.start()
        XCTAssertEqual(try users.decodeState(UsersState.self).selected, .bool(false))
        try users.send(case: UsersAction.load)
        try users.send(case: UsersAction.select(id: 2))
        _ = host.runUntilIdle()
        let state = try users.decodeState(UsersState.self)
        XCTAssertEqual(state.users.map(\.name), ["Ada", "Grace", "Linus"])
        XCTAssertEqual(
            state.selected, .table(["id": .integer(2), "name": .string("Grace"), "team": .string("compilers")]))
        try users.send(case: UsersAction.disband(team: "compilers"))
        _ = host.runUntilIdle()
        XCTAssertEqual(try users.decodeState(UsersState.self).lastRemoved, 2)
    }
}
