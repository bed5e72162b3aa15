-- feed: a refresh cancels a `more` still loading (env.cancellable / env.cancel), and each
-- item's id and each load's time come from env.uuid and env.now, which the test store runs
-- on its clock and seed, or a spec stubs.
local T = require "moonflow.test"

local JAN1 = 1767225600 * 1000 -- 2026-01-01T00:00:00Z, in ms: the store's clock at 0

local function titles(items)
  local out = {}
  for i, item in ipairs(items) do out[i] = item.title end
  return out
end

describe("feed", function()
  it("loads pages in turn, stamped with the store's clock", function()
    local store = T.store("feed", { exhaustive = false })
    store:send({ type = "more" })
    store:advance(400)
    store:receive("appended", { page = 1, at = JAN1 + 400 })
    store:send({ type = "more" })
    store:advance(400)
    store:receive("appended", { page = 2, at = JAN1 + 800 })
    assert.are.same({ "post 1", "post 2", "post 3", "post 4", "post 5", "post 6" }, titles(store.state.items))
    assert.are.equal("", store.state.loading)
  end)

  it("drops the page a refresh cancelled", function()
    local ids = 0
    local store = T.store("feed", { env = {
      now = function() return 7 end,
      uuid = function() ids = ids + 1; return "id-" .. ids end,
    } })
    store:send({ type = "more" }, function(s) s.loading = "more" end)
    store:advance(200)
    -- The page `more` asked for would come at 400 ms.
    store:send({ type = "refresh" }, function(s) s.loading = "refresh" end)
    store:advance(400)
    local page = { { id = "id-1", title = "post 1" }, { id = "id-2", title = "post 2" }, { id = "id-3", title = "post 3" } }
    store:receive({ type = "replaced", items = page, at = 7 }, function(s)
      s.items, s.page, s.loadedAt, s.loading = page, 1, 7, ""
    end)
    store:advance(1000) -- and page 1 of the cancelled `more` never arrives
    store:finish()
  end)

  it("names the id still loading when the spec ends early", function()
    local store = T.store("feed")
    store:send({ type = "more" }, function(s) s.loading = "more" end)
    local ok, err = pcall(store.finish, store)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("Cancellable ids still live: more", 1, true), err)
  end)

  it("keeps its pages in order however refresh and more interleave", function()
    T.explore("feed", { runs = 100, seed = 3 })
  end)
end)
