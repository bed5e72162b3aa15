import Foundation
import LuaKit
import MoonflowEvents
import MoonflowHost
import MoonflowLua

/// A run in another process as a hub sees it: each call sends a command (`InspectorPipe`'s
/// `dispatch`, `restart`, `inflight`, `debug`) and waits for its `reply`, which whoever reads the other
/// side hands to `answer`. `moonflow-inspector` talks so to `moonflow run` over its pipes, and
/// `moonflow serve` to an app's host over its WebSocket.
///
///     let dispatcher = RemoteDispatcher(timeout: 10) { command in output.write(command) }
///     hub.started(description, dispatch: dispatcher)
///     // for each reply read: dispatcher.answer(id: id, message: message, flights: flights)
package final class RemoteDispatcher: RunDispatcher, @unchecked Sendable {
    private struct Waiting {
        let done = DispatchSemaphore(value: 0)
        var message: String?
        var flights: [InspectorPipe.Flight]?
    }

    private let send: @Sendable (InspectorPipe.ToParent) -> Void
    private let timeout: TimeInterval?
    private let lock = NSLock()
    private var nextID = 0
    private var waiting: [Int: Waiting] = [:]

    /// - Parameters:
    ///   - timeout: how long a call waits for its reply (nil: as long as it takes, for a run
    ///     whose end ends this process too).
    ///   - send: writes a command to the other side.
    package init(timeout: TimeInterval? = nil, send: @escaping @Sendable (InspectorPipe.ToParent) -> Void) {
        self.timeout = timeout
        self.send = send
    }

    private struct Failed: Error, CustomStringConvertible { let description: String }

    /// Sends the command `make(id)` and waits for its reply.
    private func ask(
        _ make: (Int) -> InspectorPipe.ToParent
    ) throws -> (message: String?, flights: [InspectorPipe.Flight]?) {
        let (id, done) = lock.withLock { () -> (Int, DispatchSemaphore) in
            nextID += 1
            waiting[nextID] = Waiting()
            return (nextID, waiting[nextID]!.done)
        }
        send(make(id))
        let answered =
            timeout.map { done.wait(timeout: .now() + $0) == .success }
            ?? {
                done.wait(); return true
            }()
        let reply = lock.withLock { waiting.removeValue(forKey: id) }
        guard answered else {
            throw Failed(description: "the app did not answer within \(Int(timeout ?? 0)) s; is it still connected?")
        }
        return (reply?.message, reply?.flights)
    }

    /// A reply came: its caller goes on.
    package func answer(id: Int, message: String?, flights: [InspectorPipe.Flight]?) {
        lock.withLock {
            guard waiting[id] != nil else { return }
            waiting[id]!.message = message
            waiting[id]!.flights = flights
            waiting[id]!.done.signal()
        }
    }

    package func dispatch(_ action: LuaValue) throws {
        if let message = try ask({ .dispatch(id: $0, action: action) }).message { throw Failed(description: message) }
    }

    package var inFlight: [FeatureFlight] {
        ((try? ask { .inFlight(id: $0) })?.flights ?? []).map(\.featureFlight)
    }

    package func restart() throws {
        if let message = try ask({ .restart(id: $0) }).message { throw Failed(description: message) }
    }

    package func openInDebugger(inputLines: [String], answers: [String], action: Int) throws {
        let asked = try ask { .debug(id: $0, inputs: inputLines, answers: answers, action: action) }
        if let message = asked.message { throw Failed(description: message) }
    }
}
