-- search: typing into a search box. Each `query` waits 300 ms (debounce) and
-- the `latest` strategy cancels the previous query's work, so stale results
-- never arrive; a failing search service (the query "fail") is recovered with
-- `catchError` into a `failure` mutation and the screen keeps working.
local mf = require "moonflow"

local FRUITS = { "apple", "apricot", "banana", "blackberry", "cherry", "grape", "mango", "papaya" }
local DEBOUNCE_MS = 300
local SERVICE_MS = 100

-- The search backend: answers after SERVICE_MS with the fruits containing `text`.
local function search(text)
  return mf.timer(SERVICE_MS):flatMap(function()
    if text == "fail" then return mf.fail("search service unavailable") end
    local items = mf.array()  -- [] in JSON even when nothing matches
    for _, fruit in ipairs(FRUITS) do
      if fruit:find(text, 1, true) then items[#items + 1] = fruit end
    end
    return mf.just(items)
  end)
end

return mf.feature {
  name = "search",
  initial = { query = "", items = mf.array(), loading = false },
  state = {
    query = "string",
    items = { "list", of = "string" },
    loading = "boolean",
    error = "string?", -- the search service's failure, until the next results
  },
  actions = {
    query = { text = "string" },
  },
  mutations = {
    setQuery = { text = "string" },
    loading = {},
    results = { items = "table" },
    failure = { message = "string" },
  },
  strategy = { query = "latest" },
  invariants = {
    errorOnlyWhenIdle = function(s) return not (s.loading and s.error) end,
  },
  services = { search = search },

  handle = function(action, _state, env)
    if action.type == "query" then
      local text = action.text
      local setQuery = mf.just { type = "setQuery", text = text }
      if text == "" then
        return mf.concat(setQuery, mf.just { type = "results", items = mf.array() })
      end
      return mf.concat(setQuery, mf.timer(DEBOUNCE_MS):flatMap(function()
        return env.services.search(text)
          :map(function(items) return { type = "results", items = items } end)
          :startWith { type = "loading" }
          :catchError(function(err) return mf.just { type = "failure", message = tostring(err) } end)
      end))
    end
  end,

  reduce = function(state, m)
    if m.type == "setQuery" then
      state.query = m.text
    elseif m.type == "loading" then
      state.loading, state.error = true, nil
    elseif m.type == "results" then
      state.items, state.loading, state.error = m.items, false, nil
    elseif m.type == "failure" then
      state.items, state.loading, state.error = {}, false, m.message
    end
    return state
  end,
}
