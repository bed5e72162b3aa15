-- pager (easy): a results list shown three pages at a time. `next` and `prev` move one page,
-- `first` goes back to the start.
-- Fixed: `next` stops at the last page (`<`).
local mf = require "moonflow"

local LAST = 3

return mf.feature {
  name = "pager",
  initial = { page = 1 },
  state = { page = "integer" },
  actions = { next = {}, prev = {}, first = {} },
  mutations = { moved = { page = "integer" } },
  invariants = {
    pageInRange = function(s) return s.page >= 1 and s.page <= LAST, s.page end,
  },

  handle = function(action, state)
    if action.type == "next" then
      if state.page < LAST then return { type = "moved", page = state.page + 1 } end
    elseif action.type == "prev" then
      if state.page > 1 then return { type = "moved", page = state.page - 1 } end
    elseif action.type == "first" then
      return { type = "moved", page = 1 }
    end
  end,

  reduce = function(state, m)
    state.page = m.page
    return state
  end,
}
