-- colors: the Destinations seed (002). A list screen backed by the `colors`
-- datasource interactor (datasource.lua): `more` performs a `paginate`
-- request for the next page, `refresh` starts over, `page` jumps to a page.
-- Each request type has its own response mutation; the state keeps the
-- paging (page, hasMore, items). A failing request is logged by the runtime
-- with the datasource's file:line and shown as `error` here. It keeps a known race between
-- `more` and the other requests, which `moonflow test --explore colors` finds (spec/explore_spec.lua).
local mf = require "moonflow"

return mf.feature {
  name = "colors",
  initial = { page = 0, items = {}, hasMore = true, loading = false },
  state = {
    page = "integer",
    items = { "list", of = "string" },
    hasMore = "boolean",
    loading = "boolean",
    error = "string?", -- the failed request's message, until the next one
  },
  actions = {
    more = {},
    refresh = {},
    page = { n = "integer" },
  },
  mutations = {
    loading = {},
    appended = { page = "integer", items = "table", hasMore = "boolean" },
    replaced = { page = "integer", items = "table", hasMore = "boolean" },
    failure = { message = "string" },
  },
  strategy = { refresh = "latest", page = "latest" },
  invariants = {
    noColorTwice = function(s)
      local seen = {}
      for _, c in ipairs(s.items) do
        if seen[c] then return false, c end
        seen[c] = true
      end
    end,
    pageInRange = function(s) return s.page >= 0 and s.page <= 3 end,
  },
  interactors = { datasource = require "colors.datasource" },

  handle = function(action, state, env)
    local datasource = env.interactors.datasource
    local request, response
    if action.type == "more" then
      -- A second `more` while a page is on its way, or past the end, does nothing.
      if state.loading or not state.hasMore then return nil end
      request, response = { type = "paginate", page = state.page + 1 }, "appended"
    elseif action.type == "refresh" then
      request, response = { type = "refresh" }, "replaced"
    elseif action.type == "page" then
      request, response = { type = "paginate", page = action.n }, "replaced"
    else
      return nil
    end
    return datasource:perform(request)
      :map(function(r) return { type = response, page = r.page, items = r.items, hasMore = r.hasMore } end)
      :startWith { type = "loading" }
      :catchError(function(err) return mf.just { type = "failure", message = tostring(err) } end)
  end,

  reduce = function(state, m)
    if m.type == "loading" then
      state.loading, state.error = true, nil
    elseif m.type == "appended" then
      for _, color in ipairs(m.items) do state.items[#state.items + 1] = color end
      state.page, state.hasMore, state.loading = m.page, m.hasMore, false
    elseif m.type == "replaced" then
      state.items, state.page, state.hasMore, state.loading = m.items, m.page, m.hasMore, false
    elseif m.type == "failure" then
      state.loading, state.error = false, m.message
    end
    return state
  end,
}
