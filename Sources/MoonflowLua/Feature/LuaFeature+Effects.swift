import LuaKit

// What reduce returns beside the state: one effect or a list of them, checked against the
// declared `outputs` when no handler here takes them.
extension LuaFeature {
    /// What `reduce` returned beside the state: one effect (a table with a string `type`), or
    /// a list of them (`{ e1, e2 }`, routed in order: `InteractorLoop.route`; an empty list is
    /// none). Each outward one (no handler here takes it) meets the declared `outputs`, as
    /// actions meet `actions`. Throws naming the item that does not fit.
    func checkedEffects(_ value: LuaValue) throws -> LuaValue? {
        guard case .table(let table) = value else {
            throw LuaStreamError(
                message:
                    "an effect must be a table with a string 'type', or a list of them (got \(value.typeName) \(value))",
                location: location("reduce"))
        }
        if table["type"].isNil, table.hash.isEmpty {
            // A list: `{}` is no effect, `{ e }` is e.
            for (index, item) in table.array.enumerated() { try checkEffect(item, index: index + 1) }
            switch table.array.count {
            case 0: return nil
            case 1: return table.array[0]
            default: return value
            }
        }
        try checkEffect(value, index: nil)
        return value
    }

    private func checkEffect(_ effect: LuaValue, index: Int?) throws {
        let which = index.map { "effect \($0) of the list reduce returned" } ?? "an effect"
        guard case .string(let type) = effect["type"] ?? .nil else {
            let hint = index == nil ? ", or a list of them" : ""
            throw LuaStreamError(
                message: "\(which) must be a table with a string 'type'\(hint) (got \(effect))",
                location: location("reduce"))
        }
        if let outputs = binding.definition.outputs, !binding.definition.effectHandlers.contains(type.description) {
            do {
                try outputs.validate(effect)
            } catch let error as SchemaError where index != nil {
                throw SchemaError("\(which): \(error.message)")
            }
        }
    }
}
