import LuaKit

extension LuaValue {
    /// This value decoded into `T`: an effect, a mutation or a state as a generated type, with
    /// `import MoonflowHost` alone (no `LuaValueDecoder` to name).
    ///
    ///     for await effect in cart.effects {
    ///         if case .receipt(let id) = try effect.decode(as: CartEffect.self) { show(id) }
    ///     }
    ///
    /// - Throws: `DecodingError` when the value does not fit `T` (an undeclared `type`, a missing
    ///   field); its context names the place.
    public func decode<T: Decodable>(as type: T.Type = T.self) throws -> T {
        try LuaValueDecoder().decode(type, from: self)
    }
}
