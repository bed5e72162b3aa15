-- feed: a list with pull-to-refresh, using both dependencies and cancellation. `more`
-- loads the next page from a slow backend (a Lua service answering after 400 ms);
-- `refresh` starts over from page 1 and cancels a `more` still loading, whose page would
-- otherwise land on the new list (env.cancellable / env.cancel). Each item's id comes from
-- `env.uuid()` and each load's time from `env.now()`: on the virtual clock (the test store,
-- `moonflow run --clock virtual`) both follow the clock and the run's seed, so every run is
-- the same, and a spec may stub them.
local mf = require "moonflow"

local PAGE = 3

-- The backend: page `n` of the feed, after 400 ms.
local function page(n)
  local items = {}
  for i = 1, PAGE do items[i] = ("post %d"):format((n - 1) * PAGE + i) end
  return mf.timer(400, items)
end

return mf.feature {
  name = "feed",
  initial = { items = {}, page = 0, loadedAt = 0, loading = "" },
  state = {
    items = { "list", of = { id = "string", title = "string" } },
    page = "integer", -- the last page loaded (0: none yet)
    loadedAt = "integer", -- env.now() when that page arrived, in ms
    loading = { "enum", "", "more", "refresh" }, -- what is loading ("": nothing)
  },
  actions = {
    more = {},
    refresh = {},
  },
  mutations = {
    loading = { what = { "enum", "more", "refresh" } },
    appended = { items = { "list", of = { id = "string", title = "string" } }, page = "integer", at = "integer" },
    failed = {}, -- the backend failed: nothing is loading any more (the list stays)
    replaced = { items = { "list", of = { id = "string", title = "string" } }, at = "integer" },
  },
  services = { page = page },

  handle = function(action, state, env)
    -- Titles become items with ids of their own, stamped with the time they arrived.
    local function items(titles)
      local out = {}
      for i, title in ipairs(titles) do out[i] = { id = env.uuid(), title = title } end
      return out
    end
    if action.type == "more" then
      if state.loading ~= "" then return nil end -- one load at a time; a refresh goes first
      local next = state.page + 1
      return mf.concat(mf.just({ type = "loading", what = "more" }),
        env.cancellable("more", env.services.page(next):map(function(titles)
          return { type = "appended", items = items(titles), page = next, at = env.now() }
        end):catchError(function() return mf.just({ type = "failed" }) end)))
    elseif action.type == "refresh" then
      -- Starts over: the `more` (or the earlier refresh) still loading would land on the new list.
      return mf.concat(env.cancel("more", "refresh"), mf.just({ type = "loading", what = "refresh" }),
        env.cancellable("refresh", env.services.page(1):map(function(titles)
          return { type = "replaced", items = items(titles), at = env.now() }
        end):catchError(function() return mf.just({ type = "failed" }) end)))
    end
  end,

  reduce = function(state, m)
    if m.type == "loading" then
      state.loading = m.what
    elseif m.type == "failed" then
      state.loading = ""
    elseif m.type == "appended" then
      for _, item in ipairs(m.items) do state.items[#state.items + 1] = item end
      state.page, state.loadedAt, state.loading = m.page, m.at, ""
    elseif m.type == "replaced" then
      state.items, state.page, state.loadedAt, state.loading = m.items, 1, m.at, ""
    end
    return state
  end,

  invariants = {
    -- Pages arrive in order: a stale `more` landing after a refresh would break it.
    itemsMatchThePages = function(state) return #state.items == state.page * PAGE end,
  },
}
