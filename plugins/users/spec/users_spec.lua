-- users: a user list over the plugin's in-memory `users` repository (seeded
-- with Ada, Grace, Linus). Reads by id and by query; every write re-reads
-- the list by name; `disband` reports how many it removed first. A failing
-- repository call shows `error`; the next list or selection clears it.
local mf = require "moonflow"
local T = require "moonflow.test"

local ADA = { id = 1, name = "Ada", team = "compilers" }
local GRACE = { id = 2, name = "Grace", team = "compilers" }
local LINUS = { id = 3, name = "Linus", team = "kernel" }
local BARBARA = { id = 4, name = "Barbara", team = "kernel" }

local function list(users) return { type = "list", users = users } end
local function setUsers(users) return function(s) s.users = users end end

-- The repository answers on a queue of its own: the send itself changes
-- nothing, and each answer arrives later, to be received in order. `steps`
-- are the mutations the action leads to, each { mutation, change }.
local function act(store, action, steps)
  store:send(action)
  for _, step in ipairs(steps) do store:receive(step[1], step[2]) end
end

local function loaded(store)
  act(store, { type = "load" }, { { list { ADA, GRACE, LINUS }, setUsers { ADA, GRACE, LINUS } } })
end

describe("users", function()
  it("starts with no users and none selected", function()
    local store = T.store("users")
    assert.same({ users = {}, selected = false }, store.state)
    store:finish()
  end)

  describe("by id", function()
    it("loads everyone, ordered by name", function()
      local store = T.store("users")
      loaded(store)
      store:finish()
    end)

    it("selects a user by id", function()
      local store = T.store("users")
      loaded(store)
      act(store, { type = "select", id = 2 }, {
        { { type = "selected", user = GRACE }, function(s) s.selected = GRACE end },
      })
      store:finish()
    end)

    it("adds a user and re-reads the list", function()
      local store = T.store("users")
      loaded(store)
      act(store, { type = "add", id = 4, name = "Barbara", team = "kernel" }, {
        { list { ADA, BARBARA, GRACE, LINUS }, setUsers { ADA, BARBARA, GRACE, LINUS } },
      })
      store:finish()
    end)

    it("adding an existing id replaces that user", function()
      local store = T.store("users")
      local byron = { id = 1, name = "Ada Byron", team = "kernel" }
      act(store, { type = "add", id = 1, name = "Ada Byron", team = "kernel" }, {
        { list { byron, GRACE, LINUS }, setUsers { byron, GRACE, LINUS } },
      })
      store:finish()
    end)

    it("renames a user (get, then put) and re-sorts the list", function()
      local store = T.store("users")
      loaded(store)
      local zed = { id = 1, name = "Zed", team = "compilers" }
      act(store, { type = "rename", id = 1, name = "Zed" }, {
        { list { GRACE, LINUS, zed }, setUsers { GRACE, LINUS, zed } },
      })
      store:finish()
    end)

    it("removes a user, and unselects them", function()
      local store = T.store("users")
      loaded(store)
      act(store, { type = "select", id = 2 }, {
        { { type = "selected", user = GRACE }, function(s) s.selected = GRACE end },
      })
      act(store, { type = "remove", id = 2 }, {
        { list { ADA, LINUS }, function(s) s.users, s.selected = { ADA, LINUS }, false end },
      })
      store:finish()
    end)

    it("keeps the selection when someone else is removed", function()
      local store = T.store("users")
      loaded(store)
      act(store, { type = "select", id = 3 }, {
        { { type = "selected", user = LINUS }, function(s) s.selected = LINUS end },
      })
      act(store, { type = "remove", id = 1 }, { { list { GRACE, LINUS }, setUsers { GRACE, LINUS } } })
      store:finish()
    end)
  end)

  describe("by query", function()
    it("lists a team, ordered by name", function()
      local store = T.store("users")
      act(store, { type = "add", id = 4, name = "Barbara", team = "kernel" }, {
        { list { ADA, BARBARA, GRACE, LINUS }, setUsers { ADA, BARBARA, GRACE, LINUS } },
      })
      act(store, { type = "team", team = "kernel" }, { { list { BARBARA, LINUS }, setUsers { BARBARA, LINUS } } })
      act(store, { type = "team", team = "compilers" }, { { list { ADA, GRACE }, setUsers { ADA, GRACE } } })
      act(store, { type = "team", team = "nobody" }, { { list {}, setUsers {} } })
      store:finish()
    end)

    it("disbands a team: the count removed, then everyone left", function()
      local store = T.store("users")
      loaded(store)
      act(store, { type = "disband", team = "compilers" }, {
        { { type = "removed", count = 2 }, function(s) s.lastRemoved = 2 end },
        { list { LINUS }, setUsers { LINUS } },
      })
      act(store, { type = "team", team = "compilers" }, { { list {}, setUsers {} } })
      store:finish()
    end)

    it("disbanding a team with no members removes nobody", function()
      local store = T.store("users", { state = { users = {}, selected = false, lastRemoved = 2 } })
      act(store, { type = "disband", team = "nobody" }, {
        { { type = "removed", count = 0 }, function(s) s.lastRemoved = 0 end },
        { list { ADA, GRACE, LINUS }, setUsers { ADA, GRACE, LINUS } },
      })
      store:finish()
    end)
  end)

  describe("failures", function()
    local MISSING_2 = "users:get found nothing for id 2"

    it("shows an error when selecting someone who is not there", function()
      local store = T.store("users")
      loaded(store)
      act(store, { type = "remove", id = 2 }, { { list { ADA, LINUS }, setUsers { ADA, LINUS } } })
      act(store, { type = "select", id = 2 }, {
        { { type = "failure", message = MISSING_2 }, function(s) s.error = MISSING_2 end },
      })
      store:finish()
    end)

    it("shows an error when renaming someone who is not there, and writes nothing", function()
      local store = T.store("users")
      act(store, { type = "rename", id = 9, name = "X" }, {
        { { type = "failure", message = "users:get found nothing for id 9" },
          function(s) s.error = "users:get found nothing for id 9" end },
      })
      act(store, { type = "load" }, { -- no user 9 was written; the list clears the error
        { list { ADA, GRACE, LINUS }, function(s) s.users, s.error = { ADA, GRACE, LINUS }, nil end },
      })
      store:finish()
    end)

    it("a selection clears the error", function()
      local store = T.store("users", { state = { users = {}, selected = false, error = "boom" } })
      act(store, { type = "select", id = 1 }, {
        { { type = "selected", user = ADA }, function(s) s.selected, s.error = ADA, nil end },
      })
      store:finish()
    end)

    it("refuses bad fields and undeclared actions, state untouched", function()
      local store = T.store("users")
      store:sendRefused({ type = "select", id = "2" }, [[action 'select': field 'id' must be an integer (got string "2")]])
      store:sendRefused({ type = "add", id = 4, name = "Barbara" }, "action 'add': missing field 'team' (string)")
      store:sendRefused({ type = "promote", id = 1 },
        "undeclared action 'promote'; declared actions: add, disband, load, remove, rename, select, team")
      assert.same({ users = {}, selected = false }, store.state)
      store:finish()
    end)
  end)

  describe("with a stubbed repository", function()
    it("shows a failing read as an error, keeping the list", function()
      local store = T.store("users", {
        state = { users = { ADA }, selected = false },
        services = { users = { getAll = function() return mf.fail("disk full") end } },
      })
      store:send({ type = "load" }, function(s) s.error = "disk full" end)
      store:finish()
    end)

    it("does not re-read the list when a write fails", function()
      local reads = 0
      local store = T.store("users", { services = { users = {
        put = function() return mf.fail("read-only") end,
        getAll = function() reads = reads + 1; return {} end,
      } } })
      store:send({ type = "add", id = 4, name = "Barbara", team = "kernel" }, function(s) s.error = "read-only" end)
      assert.equals(0, reads)
      store:finish()
    end)

    it("passes the queries the screen needs", function()
      local queries = {}
      local store = T.store("users", { services = { users = {
        getAll = function(_, q) queries[#queries + 1] = q; return { GRACE } end,
        deleteAll = function(_, q) queries[#queries + 1] = q; return 1 end,
      } } })
      store:send({ type = "team", team = "compilers" }, function(s) s.users = { GRACE } end)
      store:send({ type = "disband", team = "kernel" }, function(s) s.lastRemoved = 1 end)
      assert.same({
        { where = { team = "compilers" }, orderBy = "name" },
        { where = { team = "kernel" } },
        { orderBy = "name" },
      }, queries)
      store:finish()
    end)
  end)
end)
