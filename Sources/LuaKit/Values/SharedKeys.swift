import Foundation

/// The keys copied out of one Lua state, kept across reads so that every copy of a key
/// shares one `LuaString` storage: a state's records repeat the same few keys (`sku`,
/// `name`, `price`, `qty` in each line of a cart), and a snapshot brought up to date one
/// reduce at a time reads each new record in a read of its own, where the per-read cache
/// (`StringCache`) cannot share them. Four keys copied per line were 192 bytes of the
/// 5,000-line cart's snapshot each (`scripts/bench viewmodel`).
///
/// A slot is found by the Lua string's address and taken only when its bytes are the
/// string's own: an address a collected string left may hold another string by now, and a
/// slot another key took is a miss, never a wrong key. Short strings only (Lua interns
/// those: one address per key text). Used on the thread that uses the state, as the state
/// is, so it needs no lock.
package final class SharedKeys {
    private static let slots = 256
    /// Longer strings are not keys a state repeats (Lua's own bound for a short string).
    private static let longest = 40
    private var addresses = [UnsafeRawPointer?](repeating: nil, count: SharedKeys.slots)
    private var keys = [LuaString](repeating: LuaString(bytes: []), count: SharedKeys.slots)

    /// The key with `count` bytes at `address`: a copy made earlier when it has these
    /// bytes, else a new copy, kept for the next read. Nil for a string too long to keep.
    func key(at address: UnsafeRawPointer, count: Int) -> LuaString? {
        guard count <= SharedKeys.longest else { return nil }
        let slot = Int((UInt(bitPattern: address) >> 4) & UInt(SharedKeys.slots - 1))
        if addresses[slot] == address,
            keys[slot].bytes.withUnsafeBytes({
                $0.count == count && (count == 0 || memcmp($0.baseAddress!, address, count) == 0)
            })
        {
            return keys[slot]
        }
        let copy = LuaString(bytes: Array(UnsafeRawBufferPointer(start: address, count: count)))
        addresses[slot] = address
        keys[slot] = copy
        return copy
    }

    /// How many distinct key storages the snapshot of `value` holds (tests check the sharing).
    package static func storageCount(in value: LuaValue) -> Int {
        var seen = Set<UnsafeRawPointer>()
        func walk(_ value: LuaValue) {
            guard case .table(let table) = value else { return }
            table.array.forEach(walk)
            for (key, element) in table.hash {
                walk(element)
                guard case .string(let s) = key else { continue }
                s.bytes.withUnsafeBufferPointer {
                    if let start = $0.baseAddress { seen.insert(UnsafeRawPointer(start)) }
                }
            }
        }
        walk(value)
        return seen.count
    }
}
