-- A feature whose state holds the 1,000 rows of rows_data.lua, for the
-- publish figure: each `touch` action changes one row's score, and the bench
-- times send -> the Swift observer receiving the new state.
local mf = require "moonflow"
local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
local makeRows = dofile(here .. "/rows_data.lua")

return mf.feature {
  name = "rows",
  initial = makeRows(1000),
  actions = { touch = { id = "integer" } },
  mutations = { score = { id = "integer", delta = "number" } },

  handle = function(action, state)
    return { type = "score", id = action.id, delta = 0.5 }
  end,

  reduce = function(state, m)
    local row = state.rows[m.id]
    row.score = row.score + m.delta
    return state
  end,
}
