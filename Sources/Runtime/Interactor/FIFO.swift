/// A first-in first-out queue with O(1) amortized push and pop.
///
/// Slots are optional so that `pop` moves its element out (`take`) instead of copying it
/// and then releasing the slot's copy: an action's payload is not retained on its way
/// through the queue.
@usableFromInline
struct FIFO<Element> {
    @usableFromInline var storage: [Element?] = []
    @usableFromInline var head = 0

    @inlinable init() {}

    @inlinable var isEmpty: Bool { head == storage.count }

    @inlinable mutating func push(_ element: Element) { storage.append(element) }

    @inlinable
    mutating func pop() -> Element? {
        guard head < storage.count else { return nil }
        let element = storage[head].take()
        head += 1
        if head == storage.count {
            storage.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 64 && head * 2 > storage.count {
            storage.removeFirst(head)
            head = 0
        }
        return element
    }

    /// The queued elements, oldest first.
    @inlinable var elements: LazyMapSequence<ArraySlice<Element?>, Element> { storage[head...].lazy.map { $0! } }

    @inlinable
    mutating func removeAll() {
        storage.removeAll()
        head = 0
    }
}
