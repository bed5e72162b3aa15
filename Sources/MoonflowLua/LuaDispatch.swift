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
    /// Makes the global `next` see through read-only views (feature hosts call it once).
    package let installNext: LuaRef

    /// `handle` and effect handlers get a read-only view of the state (DESIGN §9:
    /// outside `reduce` the state is read-only): reading goes through to the state
    /// (nested tables as views too, `#`, `pairs`, `ipairs` and `next` work), a write
    /// fails naming the field. Views are made once per table and kept while it lives,
    /// so a handler call costs one table lookup. The reader copies a view as the
    /// table it shows, so `return { type = "set", items = state.items }` works.
    private static let source = """
        local pairs, rawnext, type, error, tostring, setmetatable = pairs, next, type, error, tostring, setmetatable
        local targets = setmetatable({}, { __mode = "k" })   -- view -> the table it shows
        local views = setmetatable({}, { __mode = "k" })     -- table -> its view
        local paths = setmetatable({}, { __mode = "k" })     -- view -> `state.items[2]`
        local RO = { __metatable = "a read-only view of the state" }
        local function child(path, k)
          if type(k) == "string" and k:match("^[%a_][%w_]*$") then return path .. "." .. k end
          return path .. "[" .. tostring(k) .. "]"
        end
        local function view(t, path)
          if type(t) ~= "table" then return t end
          local v = views[t]
          if v then return v end
          v = setmetatable({}, RO)
          views[t], targets[v], paths[v] = v, t, path
          return v
        end
        RO.__index = function(v, k) return view(targets[v][k], child(paths[v], k)) end
        RO.__newindex = function(v, k)
          error(("%s is read-only here: the state changes only in reduce; return a mutation that reduce applies"):format(child(paths[v], k)), 2)
        end
        RO.__len = function(v) return #targets[v] end
        local function viewNext(v, k)
          local nk, nv = rawnext(targets[v], k)
          if nk ~= nil then return nk, view(nv, child(paths[v], nk)) end
        end
        RO.__pairs = function(v) return viewNext, v, nil end
        -- Installed by feature hosts only (not `moonflow exec`, which keeps Lua's own `next`):
        -- `next(view)` as `next(table)` would see it (`if next(state.items) == nil then`).
        local function installNext()
          next = function(t, k)
            if targets[t] then return viewNext(t, k) end
            return rawnext(t, k)
          end
        end
        return RO, targets, installNext,
          function(def, action, state, env) return def.handle(action, view(state, "state"), env) end,
          function(def, state, m) return def.reduce(state, m) end,
          function(def, kind, effect, state, env) return def.effects[kind](effect, view(state, "state"), env) end,
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
            try (1...13).map { try slots.ref($0) }
        }
        try lua.registerReadOnlyViews(metatable: refs[0], targets: refs[1])
        installNext = refs[2]
        (handle, reduce, effect, request, makeEnv) = (refs[3], refs[4], refs[5], refs[6], refs[7])
        (migrate, route, combine, mapEffect, identity) = (refs[8], refs[9], refs[10], refs[11], refs[12])
    }
}
