import Runtime
import Streams
import StreamsTesting
import XCTest

// Seed 000: ProfileInteractor and PostsInteractor. The UserInteractor that composes them is
// `mf.compose` in Lua (plugins/user), the one composition Moonflow has.

struct User: Sendable, Equatable { let id: Int; let name: String }
struct Post: Sendable, Equatable { let id: Int; let title: String }

enum Loadable<Value: Sendable & Equatable>: Sendable, Equatable {
    case initialized, loading, loaded(Value), failed(String)
}

/// The seed's `ProfileServiceType`/`PostsServiceType`: cold streams answered on virtual time.
struct FakeService: Sendable {
    let scheduler: TestScheduler
    var failing = false
    func readProfile(userId: Int) -> Producer<User> {
        failing
            ? .timer(100, User(id: 0, name: ""), on: scheduler).flatMap(.merge) { _ in .fail(TestError("profile down"))
            }
            : .timer(100, User(id: userId, name: "User \(userId)"), on: scheduler)
    }
    func readPosts(userId: Int) -> Producer<[Post]> {
        .timer(200, [Post(id: 1, title: "Hello from \(userId)")], on: scheduler)
    }
}

/// The seed's ProfileInteractor: `load` makes the reducer emit an internal `.load` effect whose
/// producer reads the profile and feeds `loaded`/`failed` back.
enum Profile {
    enum Command: Sendable, Equatable { case load }
    enum ReducerCommand: Sendable, Equatable { case load, loaded(User), failed(String) }
    enum Effect: Sendable, Equatable { case load }
    typealias ViewModel = Loadable<User>

    static func make(userId: Int, service: FakeService) -> Interactor<ViewModel, Command, ReducerCommand, Effect> {
        Interactor(
            initial: .initialized,
            handle: { command, _ in .one(toCommand(command)) },
            reduce: { viewModel, command in
                switch command {
                case .load:
                    viewModel = .loading
                    return .load
                case .loaded(let user): viewModel = .loaded(user)
                case .failed(let message): viewModel = .failed(message)
                }
                return nil
            },
            effects: { effect, _ in toSignalProducer(effect: effect, userId: userId, service: service) })
    }

    static func toCommand(_ command: Command) -> ReducerCommand {
        switch command {
        case .load: .load
        }
    }

    static func toSignalProducer(effect: Effect, userId: Int, service: FakeService) -> Producer<ReducerCommand> {
        switch effect {
        case .load:
            service.readProfile(userId: userId)
                .map { ReducerCommand.loaded($0) }
                .catchError { .just(.failed("\($0)")) }
        }
    }
}

/// The seed's PostsInteractor, the same shape over posts.
enum Posts {
    enum Command: Sendable, Equatable { case load }
    enum ReducerCommand: Sendable, Equatable { case load, loaded([Post]), failed(String) }
    enum Effect: Sendable, Equatable { case load }
    typealias ViewModel = Loadable<[Post]>

    static func make(userId: Int, service: FakeService) -> Interactor<ViewModel, Command, ReducerCommand, Effect> {
        Interactor(
            initial: .initialized,
            handle: { _, _ in .one(.load) },
            reduce: { viewModel, command in
                switch command {
                case .load:
                    viewModel = .loading
                    return .load
                case .loaded(let posts): viewModel = .loaded(posts)
                case .failed(let message): viewModel = .failed(message)
                }
                return nil
            },
            effects: { _, _ in
                service.readPosts(userId: userId).map { .loaded($0) }.catchError { .just(.failed("\($0)")) }
            })
    }
}

final class SeedExampleTests: XCTestCase {
    func testProfileInteractorLoadsThroughAnInternalEffect() {
        let scheduler = TestScheduler()
        let profile = Profile.make(userId: 7, service: FakeService(scheduler: scheduler))
        let states = Recording(profile.state.producer)
        profile.send(.load)
        XCTAssertEqual(profile.state.value, .loading)
        scheduler.advance(by: 100)
        XCTAssertEqual(states.values, [.initialized, .loading, .loaded(User(id: 7, name: "User 7"))])
    }

    func testProfileInteractorTurnsAServiceErrorIntoAFailedState() {
        let scheduler = TestScheduler()
        let profile = Profile.make(userId: 7, service: FakeService(scheduler: scheduler, failing: true))
        let errors = Recording(profile.errors)
        profile.send(.load)
        scheduler.advance(by: 100)
        XCTAssertEqual(profile.state.value, .failed("profile down"))
        XCTAssertTrue(errors.values.isEmpty, "catchError handled it inside the effect")
    }

    func testPostsInteractorLoadsPosts() {
        let scheduler = TestScheduler()
        let posts = Posts.make(userId: 3, service: FakeService(scheduler: scheduler))
        posts.send(.load)
        scheduler.advance(by: 200)
        XCTAssertEqual(posts.state.value, .loaded([Post(id: 1, title: "Hello from 3")]))
    }
}

// Seed 003: Action -> Mutation -> Reducer -> State, with the state fed back into `handle`.

final class RecordsReloadTests: XCTestCase {
    struct Record: Sendable, Equatable { let name: String }
    enum Action: Sendable { case reload }
    enum Mutation: Sendable { case loading, records([Record]), failure(String) }
    struct State: Sendable, Equatable {
        var records: [Record] = []
        var isLoading = false
        var error: String?
        static let initial = State()
    }

    /// The seed's gateway: a cold stream that answers after 100 ms, or fails.
    final class Gateway: Sendable {
        let scheduler: TestScheduler
        let calls = Locked(0)
        let answers: Locked<[Result<[Record], TestError>]>
        init(scheduler: TestScheduler, answers: [Result<[Record], TestError>]) {
            self.scheduler = scheduler
            self.answers = Locked(answers)
        }
        func fetchRecords() -> Producer<[Record]> {
            calls.mutate { $0 += 1 }
            var next: Result<[Record], TestError> = .success([])
            answers.mutate { next = $0.removeFirst() }
            let answer = next
            return Producer<Int>.timer(100, on: scheduler).flatMap(.merge) { _ in
                switch answer {
                case .success(let records): .just(records)
                case .failure(let error): .fail(error)
                }
            }
        }
    }

    private func makeInteractor(_ gateway: Gateway) -> Interactor<State, Action, Mutation, Never> {
        Interactor(
            initial: .initial,
            handle: { action, state in
                switch action {
                case .reload:
                    // The fed-back state: a reload while loading is ignored.
                    if state.isLoading { return .none }
                    return .stream(
                        gateway.fetchRecords()
                            .map { Mutation.records($0) }
                            .startWith(.loading)
                            .catchError { .just(.failure("\($0)")) })
                }
            },
            reduce: { state, mutation in
                switch mutation {
                case .loading:
                    state.isLoading = true
                    state.error = nil
                case .records(let records):
                    state.records = records
                    state.isLoading = false
                case .failure(let message):
                    state.error = message
                    state.isLoading = false
                }
                return nil
            })
    }

    func testReloadShowsLoadingThenRecords() {
        let scheduler = TestScheduler()
        let gateway = Gateway(scheduler: scheduler, answers: [.success([Record(name: "a"), Record(name: "b")])])
        let interactor = makeInteractor(gateway)
        interactor.send(.reload)
        XCTAssertEqual(interactor.state.value, State(records: [], isLoading: true, error: nil))
        scheduler.advance(by: 100)
        XCTAssertEqual(
            interactor.state.value, State(records: [Record(name: "a"), Record(name: "b")], isLoading: false))
    }

    func testASecondReloadWhileLoadingIsIgnoredByReadingTheFedBackState() {
        let scheduler = TestScheduler()
        let gateway = Gateway(
            scheduler: scheduler, answers: [.success([Record(name: "a")]), .success([Record(name: "b")])])
        let interactor = makeInteractor(gateway)
        interactor.send(.reload)
        interactor.send(.reload)  // `loading` was reduced synchronously, so this one sees isLoading
        scheduler.advance(by: 50)
        interactor.send(.reload)
        XCTAssertEqual(gateway.calls.value, 1)
        scheduler.advance(by: 50)
        XCTAssertEqual(interactor.state.value.records, [Record(name: "a")])
        interactor.send(.reload)  // done loading: this one goes through
        scheduler.advance(by: 100)
        XCTAssertEqual(gateway.calls.value, 2)
        XCTAssertEqual(interactor.state.value.records, [Record(name: "b")])
    }

    func testAFailedReloadShowsTheFailureAndCanBeRetried() {
        let scheduler = TestScheduler()
        let gateway = Gateway(
            scheduler: scheduler, answers: [.failure(TestError("offline")), .success([Record(name: "c")])])
        let interactor = makeInteractor(gateway)
        interactor.send(.reload)
        scheduler.advance(by: 100)
        XCTAssertEqual(interactor.state.value, State(records: [], isLoading: false, error: "offline"))
        interactor.send(.reload)
        XCTAssertNil(interactor.state.value.error)
        scheduler.advance(by: 100)
        XCTAssertEqual(interactor.state.value.records, [Record(name: "c")])
    }
}
