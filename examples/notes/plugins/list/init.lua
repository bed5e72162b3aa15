-- The notes, a search over them, and suggestions from a Swift service.
local mf = require "moonflow"

local function matching(notes, query)
  local shown = mf.array()
  for _, note in ipairs(notes) do
    if note:lower():find(query:lower(), 1, true) then shown[#shown + 1] = note end
  end
  return shown
end

return mf.feature {
  name = "list",
  initial = { notes = mf.array(), query = "", shown = mf.array() },
  state = {
    notes = { "list", of = "string" },
    query = "string",
    shown = { "list", of = "string" }, -- the notes that match the query
  },
  actions = { add = { text = "string" }, search = { query = "string" }, suggest = {} },
  mutations = { added = { text = "string" }, query = { query = "string" } },

  handle = function(action, state, env)
    if action.type == "add" then return { type = "added", text = action.text } end
    if action.type == "search" then return { type = "query", query = action.query } end
    return env.services.suggest(state.query):map(function(text) return { type = "added", text = text } end)
  end,

  reduce = function(state, m)
    if m.type == "added" then
      if m.text == "" then error("a note cannot be empty") end
      state.notes[#state.notes + 1] = m.text
      state.shown = matching(state.notes, state.query)
      return state, { type = "added", text = m.text }
    end
    state.query = m.query
    state.shown = matching(state.notes, state.query)
    return state
  end,

  -- A long note is kept, and said to be too long to share.
  effects = {
    added = function(effect)
      if #effect.text > 280 then error("a note of " .. #effect.text .. " characters is too long to share (280 at most)") end
    end,
  },
}
