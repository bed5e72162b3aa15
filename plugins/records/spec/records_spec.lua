-- records: `reload` shows `loading`, then the gateway's records (after
-- 200 ms) or its failure; a reload while loading is ignored. The gateway is
-- the plugin's own `fetchRecords` service unless a test stubs it.
local mf = require "moonflow"
local T = require "moonflow.test"

local RECORDS = {
  { id = 1, title = "Buy milk", done = false },
  { id = 2, title = "Write the seed example", done = true },
  { id = 3, title = "Ship Moonflow", done = false },
}

describe("records", function()
  describe("with the plugin's gateway", function()
    it("starts empty and not loading", function()
      local store = T.store("records")
      assert.same({ records = {}, isLoading = false }, store.state)
      store:finish()
    end)

    it("shows loading, then the records 200 ms later", function()
      local store = T.store("records")
      store:send({ type = "reload" }, function(s) s.isLoading = true end)
      store:advance(199)
      assert.is_true(store.state.isLoading)
      store:advance(1)
      store:receive({ type = "records", records = RECORDS }, function(s)
        s.records, s.isLoading = RECORDS, false
      end)
      store:finish()
    end)

    it("ignores reloads while loading, and reloads again once done", function()
      local store = T.store("records")
      store:send({ type = "reload" }, function(s) s.isLoading = true end)
      store:send({ type = "reload" })
      store:advance(150)
      store:send({ type = "reload", fail = true })
      store:advance(50)
      store:receive({ type = "records", records = RECORDS }, function(s)
        s.records, s.isLoading = RECORDS, false
      end)
      store:advance(50)
      store:send({ type = "reload" }, function(s) s.isLoading = true end)
      store:advance(200)
      store:receive({ type = "records", records = RECORDS }, function(s) s.isLoading = false end)
      store:finish()
    end)
  end)

  describe("failures", function()
    it("shows the gateway's failure and stops loading", function()
      local store = T.store("records")
      store:send({ type = "reload", fail = true }, function(s) s.isLoading = true end)
      store:advance(200)
      store:receive({ type = "failure", message = "gateway unavailable" }, function(s)
        s.isLoading, s.error = false, "gateway unavailable"
      end)
      store:finish()
    end)

    it("recovers: the next reload clears the error and loads", function()
      local store = T.store("records")
      store:send({ type = "reload", fail = true }, function(s) s.isLoading = true end)
      store:advance(200)
      store:receive({ type = "failure", message = "gateway unavailable" }, function(s)
        s.isLoading, s.error = false, "gateway unavailable"
      end)
      store:send({ type = "reload" }, function(s) s.isLoading, s.error = true, nil end)
      store:advance(200)
      store:receive({ type = "records", records = RECORDS }, function(s)
        s.records, s.isLoading = RECORDS, false
      end)
      store:finish()
    end)

    it("keeps the records it has when a later reload fails", function()
      local store = T.store("records", { state = { records = RECORDS, isLoading = false } })
      store:send({ type = "reload", fail = true }, function(s) s.isLoading = true end)
      store:advance(200)
      store:receive({ type = "failure", message = "gateway unavailable" }, function(s)
        s.isLoading, s.error = false, "gateway unavailable"
      end)
      assert.same(RECORDS, store.state.records)
      store:finish()
    end)

    it("refuses a bad `fail` field and an undeclared action, state untouched", function()
      local store = T.store("records")
      local ok, err = pcall(store.send, store, { type = "reload", fail = "yes" })
      assert.is_false(ok)
      assert.matches([[action 'reload': field 'fail' must be a boolean (got string "yes")]], err, 1, true)
      ok, err = pcall(store.send, store, { type = "refresh" })
      assert.is_false(ok)
      assert.matches("undeclared action 'refresh'; declared actions: reload", err, 1, true)
      assert.same({ records = {}, isLoading = false }, store.state)
      store:finish()
    end)
  end)

  describe("with a stubbed gateway", function()
    it("passes `fail` to the gateway and shows what it answers", function()
      local asked = {}
      local store = T.store("records", { services = {
        fetchRecords = function(fail)
          asked[#asked + 1] = tostring(fail)
          return mf.timer(10, { { id = 9, title = "Stubbed", done = true } })
        end,
      } })
      store:send({ type = "reload", fail = true }, function(s) s.isLoading = true end)
      store:advance(10)
      store:receive({ type = "records", records = { { id = 9, title = "Stubbed", done = true } } }, function(s)
        s.records, s.isLoading = { { id = 9, title = "Stubbed", done = true } }, false
      end)
      store:send({ type = "reload" }, function(s) s.isLoading = true end)
      store:advance(10)
      store:receive({ type = "records", records = { { id = 9, title = "Stubbed", done = true } } }, function(s)
        s.isLoading = false
      end)
      assert.same({ "true", "nil" }, asked)
      store:finish()
    end)

    it("loads within the send when the gateway answers at once", function()
      local store = T.store("records", { services = { fetchRecords = function() return RECORDS end } })
      store:send({ type = "reload" }, function(s) s.records = RECORDS end) -- loading, then records
      store:finish()
    end)

    it("turns a gateway error into the shown failure", function()
      local store = T.store("records", { services = { fetchRecords = function() return mf.fail("timeout") end } })
      store:send({ type = "reload" }, function(s) s.error = "timeout" end)
      store:finish()
    end)

    it("reports a gateway answer that is not a table and stays loading", function()
      local store = T.store("records", { services = { fetchRecords = function() return "nope" end } })
      store:send({ type = "reload" }, function(s) s.isLoading = true end)
      store:receiveError([[mutation 'records': field 'records' must be a table (got string "nope")]])
      store:send({ type = "reload" }) -- still loading: ignored
      store:finish()
    end)
  end)
end)
