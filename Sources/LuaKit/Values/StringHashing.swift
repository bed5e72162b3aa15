/// How dictionaries keyed by `LuaValue` and `LuaString` hash short strings.
///
/// Field names, action and mutation types and most state keys are a few bytes long, and
/// every action looks some of them up (`LuaTable` subscripts, schema checks, the
/// snapshot's written fields). The standard `Hasher` (SipHash, ~390 instructions per
/// lookup with its calls) costs more than the rest of such a lookup; a string of at most
/// 16 bytes is hashed here as two words, mixed with the dictionary's seed, so the
/// buckets still differ from one dictionary and one process to the next (as Lua seeds
/// its own string hash). Longer strings, and every other value, use `Hasher` as before.
/// Only the dictionary's hashing changes: equality and `hash(into:)` stay as they were.
extension LuaString {
    public func _rawHashValue(seed: Int) -> Int {
        if let h = shortHash(seed: seed) { return h }
        var hasher = Hasher()
        hasher.combine(seed)
        hash(into: &hasher)
        return hasher.finalize()
    }

    /// The hash of a string of 0...16 bytes (nil for a longer one): its bytes as two
    /// little-endian words, its length, and `seed`, through a 64-bit mixer.
    @inline(__always)
    func shortHash(seed: Int) -> Int? {
        bytes.withUnsafeBytes { raw -> Int? in
            let n = raw.count
            guard n <= 16 else { return nil }
            var lo: UInt64 = 0, hi: UInt64 = 0
            if n >= 8 {
                lo = raw.loadUnaligned(as: UInt64.self)
                // The last 8 bytes (overlapping `lo` below 16): the length below tells apart
                // strings that would load the same words.
                if n > 8 { hi = raw.loadUnaligned(fromByteOffset: n - 8, as: UInt64.self) }
            } else {
                for i in 0..<n { lo |= UInt64(raw[i]) << UInt64(8 * i) }
            }
            var h = UInt64(UInt(bitPattern: seed)) ^ (UInt64(n) &* 0x9E37_79B9_7F4A_7C15)
            h = StringMix.mix(h ^ lo)
            h = StringMix.mix(h ^ hi)
            return Int(Int64(bitPattern: h))
        }
    }
}

extension LuaValue {
    /// A string as `LuaString` hashes it (see StringHashing.swift); anything else as before.
    public func _rawHashValue(seed: Int) -> Int {
        if case .string(let s) = self, let h = s.shortHash(seed: seed) { return h }
        var hasher = Hasher()
        hasher.combine(seed)
        hash(into: &hasher)
        return hasher.finalize()
    }
}

/// A 64-bit finalizer (xor-shift, multiply; twice): every input bit reaches every output bit.
private enum StringMix {
    @inline(__always)
    static func mix(_ x: UInt64) -> UInt64 {
        var x = x
        x ^= x >> 32
        x &*= 0xD6E8_FEB8_6659_FD93
        x ^= x >> 32
        x &*= 0xD6E8_FEB8_6659_FD93
        x ^= x >> 32
        return x
    }
}
