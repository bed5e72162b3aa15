-- records: the reactive state-management seed (003). `reload` is an Action;
-- handling it produces the Mutations `loading`, then `records` or `failure`
-- from a gateway service; the reducer folds them into the State. The state
-- is fed back into `handle`, so a second `reload` while loading is ignored.
local mf = require "moonflow"

-- What the gateway serves: a few records, as a backend would.
local RECORDS = {
  { id = 1, title = "Buy milk", done = false },
  { id = 2, title = "Write the seed example", done = true },
  { id = 3, title = "Ship Moonflow", done = false },
}

-- The gateway answers after a network-like delay; `fail = true` makes it fail.
local GATEWAY_DELAY_MS = 200

local function fetchRecords(fail)
  return mf.timer(GATEWAY_DELAY_MS):flatMap(function()
    if fail then return mf.fail("gateway unavailable") end
    return mf.just(RECORDS)
  end)
end

return mf.feature {
  name = "records",
  initial = { records = {}, isLoading = false },
  state = {
    records = { "list", of = { id = "integer", title = "string", done = "boolean" } },
    isLoading = "boolean",
    error = "string?", -- the last failure, until the next reload
  },
  actions = {
    reload = { fail = "boolean?" },
  },
  mutations = {
    loading = {},
    records = { records = "table" },
    failure = { message = "string" },
  },
  services = { fetchRecords = fetchRecords },
  invariants = {
    errorOnlyWhenIdle = function(s) return not (s.isLoading and s.error) end,
  },

  handle = function(action, state, env)
    if action.type == "reload" then
      if state.isLoading then return nil end -- already loading: ignore
      return env.services.fetchRecords(action.fail)
        :map(function(records) return { type = "records", records = records } end)
        :startWith { type = "loading" }
        :catchError(function(err) return mf.just { type = "failure", message = tostring(err) } end)
    end
  end,

  reduce = function(state, m)
    if m.type == "loading" then
      state.isLoading, state.error = true, nil
    elseif m.type == "records" then
      state.records, state.isLoading = m.records, false
    elseif m.type == "failure" then
      state.isLoading, state.error = false, m.message
    end
    return state
  end,
}
