-- The colors datasource: a request interactor (Destinations' Interactable).
-- Each request type has its own response: `paginate` answers one page of
-- colors with whether more follow, `refresh` answers the first page again.
-- A request it cannot serve raises an error; the runtime logs it with this
-- file's line and fails the response stream.
local mf = require "moonflow"

local COLORS = { "red", "orange", "yellow", "green", "blue", "indigo", "violet" }
local PAGE_SIZE = 3
local LATENCY_MS = 100

local function pageCount()
  return (#COLORS + PAGE_SIZE - 1) // PAGE_SIZE
end

-- The response to a page request: { page, items, hasMore }.
local function page(n)
  if n < 1 or n > pageCount() then
    error(("no page %d: pages are 1 to %d"):format(n, pageCount()))
  end
  local items = {}
  for i = (n - 1) * PAGE_SIZE + 1, math.min(n * PAGE_SIZE, #COLORS) do
    items[#items + 1] = COLORS[i]
  end
  return { page = n, items = items, hasMore = n < pageCount() }
end

return mf.interactor {
  name = "colors",
  requests = {
    paginate = function(request)
      return mf.timer(LATENCY_MS, page(request.page))
    end,
    refresh = function()
      return mf.timer(LATENCY_MS, page(1))
    end,
  },
}
