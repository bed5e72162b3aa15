-- counter: the demo feature. Actions become mutations (synchronously, or
-- later through a timer), the reducer changes the state in place, and
-- reaching a multiple of ten sends an outward `milestone` effect.
local mf = require "moonflow"

return mf.feature {
  name = "counter",
  initial = { count = 0 },
  state = { count = "integer" },
  actions = {
    increment = { by = "integer?" },
    decrement = {},
    reset = {},
    incrementLater = { ms = "integer" },
  },
  mutations = {
    add = { n = "integer" },
    set = { value = "integer" },
  },
  -- Effects that go out to the host (no handler here takes them).
  outputs = {
    milestone = { count = "integer" },
  },
  strategy = { incrementLater = "latest" },
  -- What must hold after every step; `T.explore` (spec/explore_spec.lua) checks them.
  invariants = {
    whole = function(s) return math.type(s.count) == "integer" end,
  },

  handle = function(action)
    if action.type == "increment" then
      return { type = "add", n = action.by or 1 }
    elseif action.type == "decrement" then
      return { type = "add", n = -1 }
    elseif action.type == "reset" then
      return { type = "set", value = 0 }
    elseif action.type == "incrementLater" then
      return mf.timer(action.ms, { type = "add", n = 1 })
    end
  end,

  reduce = function(state, m)
    if m.type == "add" then
      state.count = state.count + m.n
    elseif m.type == "set" then
      state.count = m.value
    end
    if m.type == "add" and state.count % 10 == 0 then
      return state, { type = "milestone", count = state.count }
    end
    return state
  end,
}
