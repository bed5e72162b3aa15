/// A first-in first-out queue with O(1) amortized push and pop.
struct FIFO<Element> {
    private var storage: [Element] = []
    private var head = 0

    var isEmpty: Bool { head == storage.count }
    var count: Int { storage.count - head }

    mutating func push(_ element: Element) { storage.append(element) }

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

    var elements: ArraySlice<Element> { storage[head...] }

    mutating func removeAll() {
        storage.removeAll()
        head = 0
    }
}
