import LuaKit

extension LuaValueEncoder {
    /// `{"add": {"sku": "A"}}` (Swift's synthesized form of an enum case) as
    /// `{ type = "add", sku = "A" }`; a table that already has `type` is kept.
    package static func actionFromEnumCase<A: Encodable>(_ action: A) throws -> LuaValue {
        let encoded = try LuaValueEncoder().encode(action)
        switch encoded {
        case .string(let name):
            // A case without associated values in an enum with a String raw value.
            return ["type": .string(name)]
        case .table(let t) where t["type"].isNil && t.array.isEmpty && t.hash.count == 1:
            let (key, value) = t.hash.first!
            guard case .string(let name) = key else { return encoded }
            var fields: LuaTable
            switch value {
            case .table(let inner):
                fields = inner
            // Unlabelled values (`case add(String)`) come as `_0`, `_1`: keep them as they are.
            default:
                fields = LuaTable()
                fields["value"] = value
            }
            fields["type"] = .string(name)
            return .table(fields)
        default:
            return encoded
        }
    }
}
