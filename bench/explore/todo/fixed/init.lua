-- todo (easy): a to-do list. `add` appends an item, `toggleFirst` ticks or unticks the first,
-- `clearDone` removes the ticked ones; the header shows how many are left (`remaining`).
-- Fixed: `clearDone` counts the items it keeps.
local mf = require "moonflow"

local function open(items)
  local n = 0
  for _, item in ipairs(items) do if not item.done then n = n + 1 end end
  return n
end

return mf.feature {
  name = "todo",
  initial = { items = mf.array(), remaining = 0 },
  state = { items = { "list", of = { title = "string", done = "boolean" } }, remaining = "integer" },
  actions = { add = { title = "string" }, toggleFirst = {}, clearDone = {} },
  mutations = { added = { title = "string" }, toggled = {}, cleared = {} },
  invariants = {
    remainingCounts = function(s) return s.remaining == open(s.items), s.remaining end,
  },

  handle = function(action)
    if action.type == "add" then return { type = "added", title = action.title } end
    if action.type == "toggleFirst" then return { type = "toggled" } end
    if action.type == "clearDone" then return { type = "cleared" } end
  end,

  reduce = function(state, m)
    if m.type == "added" then
      state.items[#state.items + 1] = { title = m.title, done = false }
      state.remaining = state.remaining + 1
    elseif m.type == "toggled" then
      local first = state.items[1]
      if first then
        first.done = not first.done
        state.remaining = state.remaining + (first.done and -1 or 1)
      end
    elseif m.type == "cleared" then
      local kept = mf.array()
      state.remaining = open(state.items)
      for _, item in ipairs(state.items) do
        if not item.done then kept[#kept + 1] = item end
      end
      state.items = kept
    end
    return state
  end,
}
