/// A first-in first-out queue with O(1) amortized push and pop.
@usableFromInline
struct FIFO<Element> {
    @usableFromInline var storage: [Element] = []
    @usableFromInline var head = 0

    @inlinable init() {}

    @inlinable var isEmpty: Bool { head == storage.count }

    @inlinable mutating func push(_ element: Element) { storage.append(element) }

    @inlinable
    mutating func pop() -> Element? {
        guard head < storage.count else { return nil }
        let element = storage[head]
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

    @inlinable var elements: ArraySlice<Element> { storage[head...] }

    @inlinable
    mutating func removeAll() {
        storage.removeAll()
        head = 0
    }
}
