-- search (medium: a timer crossing): search as you type. Each keystroke (`query`) waits 300 ms
-- of quiet, then asks the `search` service (a fake backend) for the results.
-- Fixed: the latest keystroke's stream replaces the one before (`latest`).
local mf = require "moonflow"

local DEBOUNCE_MS = 300
local WORDS = { "apple", "apricot", "banana", "blueberry", "cherry" }

local function search(text)
  local found = mf.array()
  for _, w in ipairs(WORDS) do
    if w:sub(1, #text) == text then found[#found + 1] = w end
  end
  return mf.timer(50):map(function() return found end)
end

return mf.feature {
  name = "search",
  initial = { query = "", loading = false, results = mf.array() },
  state = {
    query = "string",
    loading = "boolean",
    results = { "list", of = "string" },
    resultsFor = "string?",
    error = "string?",
  },
  actions = { query = { text = "string" } },
  mutations = {
    typed = { text = "string" },
    results = { text = "string", items = { "list", of = "string" } },
    failed = { text = "string", message = "string" },
  },
  strategy = { query = "latest" },
  services = { search = search },
  invariants = {
    resultsMatchQuery = function(s)
      if not s.loading and s.resultsFor ~= nil then return s.resultsFor == s.query, s.resultsFor end
    end,
  },

  handle = function(action, _state, env)
    local text = action.text
    local typed = mf.just { type = "typed", text = text }
    if text == "" then return typed end  -- a cleared field searches nothing
    return mf.concat(typed, mf.timer(DEBOUNCE_MS):flatMap(function()
      return env.services.search(text)
        :map(function(items) return { type = "results", text = text, items = items } end)
        :catchError(function(err) return mf.just { type = "failed", text = text, message = tostring(err) } end)
    end))
  end,

  reduce = function(state, m)
    if m.type == "typed" then
      state.query, state.loading = m.text, m.text ~= ""
      if m.text == "" then state.results, state.resultsFor, state.error = mf.array(), nil, nil end
    elseif m.type == "results" then
      state.loading, state.results, state.resultsFor, state.error = false, m.items, m.text, nil
    elseif m.type == "failed" then
      state.loading, state.results, state.resultsFor, state.error = false, mf.array(), nil, m.message
    end
    return state
  end,
}
