import LuaKit
import MoonflowLua

/// `moonflow types --lua`: the `state = { ... }` declaration of each feature of a plugin, as
/// Lua source to paste into its `mf.feature { ... }` (or `mf.compose`), indented as a field of it: the declared one, or,
/// for a feature without one, the one its `initial` suggests, said to be inferred.
package struct LuaStateDeclaration: Sendable {
    package let features: [FeatureDeclarations]

    package init(features: [FeatureDeclarations]) { self.features = features }

    package func source() -> String {
        features.map { feature in
            // Escaped: a line break in a name or a path cannot end the comment and start code.
            let where_ = "`\(LuaValue.escaped(feature.name))` (\(LuaValue.escaped(feature.file)))"
            let comment: String
            if !feature.stateIsInferred {
                comment = "  -- The state \(where_) declares."
            } else if feature.kind == .compose {
                comment =
                    "  -- \(where_) declares no state: describe what its `combine` returns, e.g.\n  -- state = { count = \"integer\" },"
                return comment + "\n"
            } else {
                comment =
                    "  -- Inferred from `initial` of \(where_), which declares no state: add the fields\n"
                    + "  -- its reducer sets later (with ? when they may be nil), and narrow any \"table\"."
            }
            return comment + "\n  state = " + feature.state.luaSource(indent: 2) + ",\n"
        }.joined(separator: "\n")
    }
}
