#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Streams

/// Where the loop publishes each reduced state: the latest value, lightweight observers, and the
/// `Property` (created on first use, so a loop nobody observes through Streams never pays for it).
///
/// **Threading**: `publish` is called by the loop only (one thread at a time); everything else from
/// any thread. The lock is never held while observers run.
@usableFromInline
final class StateOutlet<State: Sendable>: @unchecked Sendable {
    /// Who receives each state; replaced whole when it changes, so `publish` retains one object.
    @usableFromInline
    final class Receivers: Sendable {
        let observers: [(id: Int, body: @Sendable (State) -> Void)]
        @usableFromInline let bodies: ContiguousArray<@Sendable (State) -> Void>
        @usableFromInline let property: MutableProperty<State>?

        init(observers: [(id: Int, body: @Sendable (State) -> Void)] = [], property: MutableProperty<State>? = nil) {
            self.observers = observers
            self.bodies = ContiguousArray(observers.map(\.body))
            self.property = property
        }

        @inlinable
        func send(_ state: State) {
            bodies.withUnsafeBufferPointer { bodies in
                for index in bodies.indices { bodies[index](state) }
            }
            property?.value = state
        }
    }

    @usableFromInline
    struct Shared {
        @usableFromInline var value: State
        @usableFromInline var receivers = Receivers()
        var nextID = 0
        @inlinable init(value: State) { self.value = value }
    }

    @usableFromInline let shared: Locked<Shared>

    init(_ initial: State) {
        shared = Locked(Shared(value: initial))
    }

    /// The latest published state.
    @inlinable var value: State { shared.withLock { $0.value } }

    /// Records `state` as the latest and hands it to the observers and the property, in that order.
    @inlinable
    func publish(_ state: State) {
        let receivers = shared.withLock { shared in
            shared.value = state
            return shared.receivers
        }
        receivers.send(state)
    }

    /// The property, created with the latest published state on first use.
    var property: Property<State> {
        Property(
            shared.withLock { shared in
                if let property = shared.receivers.property { return property }
                let property = MutableProperty(shared.value)
                shared.receivers = Receivers(observers: shared.receivers.observers, property: property)
                return property
            })
    }

    func observe(_ body: @escaping @Sendable (State) -> Void) -> Disposable {
        let id: Int = shared.withLock { shared in
            shared.nextID += 1
            shared.receivers = Receivers(
                observers: shared.receivers.observers + [(shared.nextID, body)], property: shared.receivers.property)
            return shared.nextID
        }
        return AnyDisposable { [weak self] in
            self?.shared.withLock { shared in
                shared.receivers = Receivers(
                    observers: shared.receivers.observers.filter { $0.id != id }, property: shared.receivers.property)
            }
        }
    }
}
