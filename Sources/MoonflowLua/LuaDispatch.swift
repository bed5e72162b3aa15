import LuaKit

/// Small Lua functions through which Swift calls a definition's functions by
/// name at dispatch time (no closure keeps old code alive across a reload).
package final class LuaDispatch: @unchecked Sendable {
    package let handle: LuaRef
    package let reduce: LuaRef
    package let effect: LuaRef
    package let request: LuaRef
    package let makeEnv: LuaRef
    package let migrate: LuaRef
    package let route: LuaRef
    package let combine: LuaRef
    package let mapEffect: LuaRef
    package let identity: LuaRef

    private static let source = """
        local pairs = pairs
        return function(def, action, state, env) return def.handle(action, state, env) end,
          function(def, state, m) return def.reduce(state, m) end,
          function(def, kind, effect, state, env) return def.effects[kind](effect, state, env) end,
          function(def, kind, request, env) return def.requests[kind](request, env) end,
          function(def, swiftServices, interactors, asStream, overrides)
            local services = {}
            for k, v in pairs(swiftServices) do services[k] = v end
            if def.services then
              for k, v in pairs(def.services) do
                services[k] = function(...)
                  local s, err = asStream(k, v(...))
                  if s == nil then error(err, 2) end  -- at the line that called the service
                  return s
                end
              end
            end
            if overrides then for k, v in pairs(overrides) do services[k] = v end end
            return { services = services, interactors = interactors }
          end,
          function(def, old, from) return def.migrate(old, from) end,
          function(def, action, state) return def.route(action, state) end,
          function(def, states) return def.combine(states) end,
          function(def, child, effect) return def.mapEffect(child, effect) end,
          function(...) return ... end
        """

    init(_ lua: LuaState) throws {
        let refs = try lua.call(try lua.load(string: LuaDispatch.source, name: "moonflow"), []) { slots in
            try (1...10).map { try slots.ref($0) }
        }
        (handle, reduce, effect, request, makeEnv) = (refs[0], refs[1], refs[2], refs[3], refs[4])
        (migrate, route, combine, mapEffect, identity) = (refs[5], refs[6], refs[7], refs[8], refs[9])
    }
}
