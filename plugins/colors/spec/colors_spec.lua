-- colors: a paged list over the `colors` datasource interactor (3 colors a
-- page, 7 colors, 100 ms a request). `more` appends the next page, `refresh`
-- and `page` replace the list (latest wins); a page the datasource cannot
-- serve fails at once and is shown as `error`.
local T = require "moonflow.test"

local PAGE1 = { "red", "orange", "yellow" }
local PAGE2 = { "green", "blue", "indigo" }
local PAGE3 = { "violet" }
-- The datasource's file as the run names it: relative, or absolute when `moonflow test`
-- was given an absolute folder (the spec's own chunk name says which).
local DATASOURCE = debug.getinfo(1, "S").source:match("^@(.*)spec/colors_spec%.lua$") .. "datasource.lua"
local NO_PAGE_9 = DATASOURCE .. ":19: no page 9: pages are 1 to 3"

local function initial() return { page = 0, items = {}, hasMore = true, loading = false } end

describe("colors", function()
  it("starts on page 0 with more to load", function()
    local store = T.store("colors")
    assert.same(initial(), store.state)
    store:finish()
  end)

  describe("more", function()
    it("appends the first page after 100 ms", function()
      local store = T.store("colors")
      store:send({ type = "more" }, function(s) s.loading = true end)
      store:advance(99)
      assert.same({}, store.state.items)
      store:advance(1)
      store:receive({ type = "appended", page = 1, items = PAGE1, hasMore = true }, function(s)
        s.page, s.items, s.loading = 1, { "red", "orange", "yellow" }, false
      end)
      store:finish()
    end)

    it("is ignored while a page is on its way", function()
      local store = T.store("colors")
      store:send({ type = "more" }, function(s) s.loading = true end)
      store:advance(50)
      store:send({ type = "more" })
      store:advance(50)
      store:receive({ type = "appended", page = 1, items = PAGE1, hasMore = true }, function(s)
        s.page, s.items, s.loading = 1, { "red", "orange", "yellow" }, false
      end)
      store:advance(500)
      store:finish() -- page 2 was never asked for
    end)

    it("pages to the end, then does nothing", function()
      local store = T.store("colors")
      store:send({ type = "more" }, function(s) s.loading = true end)
      store:advance(100)
      store:receive({ type = "appended", page = 1, items = PAGE1, hasMore = true }, function(s)
        s.page, s.items, s.loading = 1, { "red", "orange", "yellow" }, false
      end)
      store:send({ type = "more" }, function(s) s.loading = true end)
      store:advance(100)
      store:receive({ type = "appended", page = 2, items = PAGE2, hasMore = true }, function(s)
        s.page, s.loading = 2, false
        s.items = { "red", "orange", "yellow", "green", "blue", "indigo" }
      end)
      store:send({ type = "more" }, function(s) s.loading = true end)
      store:advance(100)
      store:receive({ type = "appended", page = 3, items = PAGE3, hasMore = false }, function(s)
        s.page, s.hasMore, s.loading = 3, false, false
        s.items = { "red", "orange", "yellow", "green", "blue", "indigo", "violet" }
      end)
      store:send({ type = "more" })
      store:advance(200)
      store:finish()
    end)
  end)

  describe("refresh and page", function()
    it("refresh replaces the list with the first page", function()
      local store = T.store("colors", { state = {
        page = 3, hasMore = false, loading = false,
        items = { "red", "orange", "yellow", "green", "blue", "indigo", "violet" },
      } })
      store:send({ type = "refresh" }, function(s) s.loading = true end)
      store:advance(100)
      store:receive({ type = "replaced", page = 1, items = PAGE1, hasMore = true }, function(s)
        s.page, s.items, s.hasMore, s.loading = 1, { "red", "orange", "yellow" }, true, false
      end)
      store:finish()
    end)

    it("page jumps to a page, replacing the list", function()
      local store = T.store("colors")
      store:send({ type = "page", n = 2 }, function(s) s.loading = true end)
      store:advance(100)
      store:receive({ type = "replaced", page = 2, items = PAGE2, hasMore = true }, function(s)
        s.page, s.items, s.loading = 2, { "green", "blue", "indigo" }, false
      end)
      store:send({ type = "more" }, function(s) s.loading = true end)
      store:advance(100)
      store:receive({ type = "appended", page = 3, items = PAGE3, hasMore = false }, function(s)
        s.page, s.hasMore, s.loading = 3, false, false
        s.items = { "green", "blue", "indigo", "violet" }
      end)
      store:finish()
    end)

    it("answers only the latest of quick page jumps", function()
      local store = T.store("colors")
      store:send({ type = "page", n = 1 }, function(s) s.loading = true end)
      store:advance(60)
      store:send({ type = "page", n = 3 })
      store:advance(99) -- t = 159: page 1 would have answered at 100
      assert.same({}, store.state.items)
      store:advance(1)
      store:receive({ type = "replaced", page = 3, items = PAGE3, hasMore = false }, function(s)
        s.page, s.items, s.hasMore, s.loading = 3, { "violet" }, false, false
      end)
      store:finish()
    end)

    it("answers only the latest of two refreshes", function()
      local store = T.store("colors")
      store:send({ type = "refresh" }, function(s) s.loading = true end)
      store:advance(50)
      store:send({ type = "refresh" })
      store:advance(100)
      store:receive({ type = "replaced", page = 1, items = PAGE1, hasMore = true }, function(s)
        s.page, s.items, s.loading = 1, { "red", "orange", "yellow" }, false
      end)
      store:advance(500)
      store:finish() -- one `replaced`, not two
    end)
  end)

  describe("failures", function()
    it("shows a page the datasource cannot serve as an error, with its file:line", function()
      local store = T.store("colors")
      store:send({ type = "page", n = 9 }, function(s) s.error = NO_PAGE_9 end) -- loading, then failure at once
      -- The interactor also logs the failure, with where the request failed.
      local logs = store.logs
      assert.equal(1, #logs)
      assert.equal(DATASOURCE .. ":19", logs[1].where)
      assert.matches("request 'paginate' failed: " .. NO_PAGE_9, logs[1].message, 1, true)
      store:finish()
    end)

    it("keeps the list and goes on paging after a failed request", function()
      local store = T.store("colors")
      store:send({ type = "page", n = 2 }, function(s) s.loading = true end)
      store:advance(100)
      store:receive({ type = "replaced", page = 2, items = PAGE2, hasMore = true }, function(s)
        s.page, s.items, s.loading = 2, { "green", "blue", "indigo" }, false
      end)
      store:send({ type = "page", n = 9 }, function(s) s.error = NO_PAGE_9 end)
      store:send({ type = "more" }, function(s) s.loading, s.error = true, nil end)
      store:advance(100)
      store:receive({ type = "appended", page = 3, items = PAGE3, hasMore = false }, function(s)
        s.page, s.hasMore, s.loading = 3, false, false
        s.items = { "green", "blue", "indigo", "violet" }
      end)
      store:finish()
    end)

    it("fails page 0 and negative pages too", function()
      local store = T.store("colors")
      store:send({ type = "page", n = 0 }, function(s)
        s.error = DATASOURCE .. ":19: no page 0: pages are 1 to 3"
      end)
      store:send({ type = "page", n = -1 }, function(s)
        s.error = DATASOURCE .. ":19: no page -1: pages are 1 to 3"
      end)
      store:finish()
    end)

    it("refuses a non-integer page and undeclared actions", function()
      local store = T.store("colors")
      local ok, err = pcall(store.send, store, { type = "page", n = "2" })
      assert.is_false(ok)
      assert.matches([[action 'page': field 'n' must be an integer (got string "2")]], err, 1, true)
      ok, err = pcall(store.send, store, { type = "next" })
      assert.is_false(ok)
      assert.matches("undeclared action 'next'; declared actions: more, page, refresh", err, 1, true)
      assert.same(initial(), store.state)
      store:finish()
    end)
  end)
end)
