import Foundation
import LuaKit
import Streams

/// What one call of a Swift service (or a repository method) delivered: its
/// values, then how it ended. `moonflow run --record` keeps these, and
/// `moonflow replay` answers the same calls from them instead of calling again
/// (a database or a network answers differently the second time).
public struct ServiceOutcome: Sendable, Equatable {
    public var values: [LuaValue]
    /// The failure's message, when the call failed.
    public var error: String?

    public init(values: [LuaValue] = [], error: String? = nil) {
        self.values = values
        self.error = error
    }
}

/// Service calls recorded, or answered from a recording: set on a host's
/// bridge (`LuaBridge.serviceTap`) before its feature loads. Calls are counted
/// per service (`users:getAll`), so answers match by call order whatever order
/// the calls finish in.
public final class ServiceTap: @unchecked Sendable {
    public typealias Recorder = @Sendable (_ service: String, _ call: Int, _ outcome: ServiceOutcome) -> Void

    private let lock = NSLock()
    private let recorder: Recorder?
    private var answers: [String: [Int: ServiceOutcome]]?
    private var calls: [String: Int] = [:]

    /// Hands every call's outcome to `recorder` once the call ends.
    public init(recording recorder: @escaping Recorder) {
        self.recorder = recorder
        answers = nil
    }

    /// Answers calls from `answers` (by service, then call number from 1).
    public init(answering answers: [String: [Int: ServiceOutcome]]) {
        recorder = nil
        self.answers = answers
    }

    func nextCall(_ service: String) -> Int {
        lock.withLock {
            calls[service, default: 0] += 1
            return calls[service]!
        }
    }

    /// The call made through the tap: recorded as it runs, or answered from the recording.
    func tapped(_ producer: Producer<LuaValue>, service: String) -> Producer<LuaValue> {
        let call = nextCall(service)
        if let answers {
            guard let outcome = answers[service]?[call] else {
                return .fail(LuaStreamError(message: "the recording has no answer for call \(call) of service '\(service)': the feature calls it more often than when it was recorded; record the session again"))
            }
            let values = Producer<LuaValue>.from(outcome.values)
            guard let error = outcome.error else { return values }
            return .concat([values, .fail(LuaStreamError(message: error))])
        }
        guard let recorder else { return producer }
        let collected = Locked([LuaValue]())
        return Producer { observer, lifetime in
            lifetime += producer.start(Observer { event in
                switch event {
                case .value(let v): collected.withLock { $0.append(v) }
                case .completed: recorder(service, call, ServiceOutcome(values: collected.withLock { $0 }))
                case .failed(let e): recorder(service, call, ServiceOutcome(values: collected.withLock { $0 }, error: LuaStreamError(e).description))
                case .interrupted: break
                }
                observer.send(event)
            })
        }
    }
}
