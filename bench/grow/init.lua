-- bench/grow: a todo list that grows by one item per action, for the
-- growth suite of scripts/bench (the cost per action must not grow with
-- the state).
local mf = require "moonflow"

return mf.feature {
  name = "grow",
  initial = { items = mf.array and mf.array() or {}, count = 0 },
  actions = { add = {} },
  mutations = { added = {} },
  handle = function() return { type = "added" } end,
  reduce = function(state)
    state.count = state.count + 1
    state.items[#state.items + 1] = { id = state.count, title = "item " .. state.count, done = false }
    return state
  end,
}
