import LuaKit
import Streams

/// The schemas `FeatureDefinition.read` compiled lately, by the declaration they came from:
/// a definition read again with the same `actions`, `mutations`, `outputs` or `state` (each
/// run of `T.explore` loads its plugin afresh, a thousand times an exploration) takes the
/// compiled schema instead of reading and compiling the declaration again.
///
/// Only declarations without problems are kept (a problem's message names its feature), and a
/// schema depends on nothing but its declaration and kind, so a kept one is what a fresh
/// read would make. At most `limit` are kept; the cache starts over when full, so a
/// long-lived host that reloads edited plugins keeps no more than that.
///
/// **Threading:** any thread (under a lock).
package enum DeclarationCache {
    private struct Key: Hashable {
        let kind: String
        let declaration: LuaValue
    }

    private struct Kept {
        var schemas: [Key: Schema] = [:]
        var states: [LuaValue: SchemaType] = [:]
    }

    /// How many schemas (and as many state types) are kept at most.
    package static let limit = 64
    private static let kept = Locked(Kept())

    /// The schema compiled from `declaration` of `kind`, made by `make` unless kept.
    package static func schema(kind: String, declaration: LuaValue, _ make: () throws -> Schema) rethrows -> Schema {
        let key = Key(kind: kind, declaration: declaration)
        if let known = kept.withLock({ $0.schemas[key] }) { return known }
        let made = try make()
        kept.withLock { k in
            if k.schemas.count >= limit { k.schemas.removeAll() }
            k.schemas[key] = made
        }
        return made
    }

    /// How many schemas are kept now.
    package static var count: Int { kept.withLock { $0.schemas.count } }

    /// The type a declared `state` reads as, made by `make` unless kept.
    static func state(
        _ declaration: LuaValue, _ make: () throws(SchemaType.DeclarationProblem) -> SchemaType
    ) throws(SchemaType.DeclarationProblem) -> SchemaType {
        if let known = kept.withLock({ $0.states[declaration] }) { return known }
        let made = try make()
        kept.withLock { k in
            if k.states.count >= limit { k.states.removeAll() }
            k.states[declaration] = made
        }
        return made
    }
}
