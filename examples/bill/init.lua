-- bill: the example of docs/debugging.md's "Going back". Each line of a bill adds its
-- price and the VAT its kind pays; one run's total comes out wrong, and stepping back
-- from the wrong state finds the line that made it.
local mf = require "moonflow"

local VAT = { food = 10, books = 0, tools = 20 }  -- percent, by kind

return mf.feature {
  name = "bill",
  initial = { lines = 0, total = 0 },
  state = { lines = "integer", total = "integer" },
  actions = { add = { kind = "string", cents = "integer" } },
  mutations = { added = { cents = "integer" } },

  handle = function(action)
    local rate = VAT[action.kind] or 0
    local tax = action.cents * rate // 100
    return { type = "added", cents = action.cents + tax }
  end,

  reduce = function(state, m)
    state.lines = state.lines + 1
    state.total = state.total + m.cents
    return state
  end,
}
