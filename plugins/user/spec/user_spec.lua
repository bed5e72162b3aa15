-- user: profile and posts children composed into one view model
-- { name, bio, titles, loading, error }. Each child loads through an
-- internal effect and a service (profile 100 ms, posts 150 ms); selecting a
-- post sends the outward `openPost` effect; unrouted actions are refused.
local mf = require "moonflow"
local T = require "moonflow.test"

local ADA = { id = 1, name = "Ada Lovelace", bio = "Wrote the first program." }
local POSTS = { { id = 10, title = "Notes on the Analytical Engine" }, { id = 11, title = "On Bernoulli numbers" } }
local TITLES = { "Notes on the Analytical Engine", "On Bernoulli numbers" }

describe("user", function()
  it("starts with an empty view model", function()
    local store = T.store("user")
    assert.same({ name = "", bio = "", titles = {}, loading = false }, store.state)
    store:finish()
  end)

  describe("loading", function()
    it("loads the profile after 100 ms", function()
      local store = T.store("user")
      store:send({ type = "loadProfile", userId = 1 }, function(s) s.loading = true end)
      store:advance(99)
      assert.is_true(store.state.loading)
      store:advance(1)
      store:receive({ type = "loaded", user = ADA }, function(s)
        s.name, s.bio, s.loading = ADA.name, ADA.bio, false
      end)
      store:finish()
    end)

    it("loads the posts' titles after 150 ms", function()
      local store = T.store("user")
      store:send({ type = "loadPosts", userId = 1 }, function(s) s.loading = true end)
      store:advance(150)
      store:receive({ type = "loaded", items = POSTS }, function(s)
        s.titles, s.loading = TITLES, false
      end)
      store:finish()
    end)

    it("stays loading until both children have loaded", function()
      local store = T.store("user")
      store:send({ type = "loadProfile", userId = 1 }, function(s) s.loading = true end)
      store:send({ type = "loadPosts", userId = 1 })
      store:advance(100)
      store:receive({ type = "loaded", user = ADA }, function(s) s.name, s.bio = ADA.name, ADA.bio end)
      store:advance(50)
      store:receive({ type = "loaded", items = POSTS }, function(s)
        s.titles, s.loading = TITLES, false
      end)
      store:finish()
    end)

    it("fetches once when load is sent again while loading", function()
      local store = T.store("user")
      store:send({ type = "loadProfile", userId = 1 }, function(s) s.loading = true end)
      store:send({ type = "loadProfile", userId = 1 })
      store:send({ type = "loadPosts", userId = 1 })
      store:send({ type = "loadPosts", userId = 1 })
      store:advance(100)
      store:receive({ type = "loaded", user = ADA }, function(s) s.name, s.bio = ADA.name, ADA.bio end)
      store:advance(50)
      store:receive({ type = "loaded", items = POSTS }, function(s)
        s.titles, s.loading = TITLES, false
      end)
      store:advance(500)
      store:finish() -- no second `loaded` from either child
    end)

    it("shows no titles for a user without posts", function()
      local store = T.store("user")
      store:send({ type = "loadPosts", userId = 2 }, function(s) s.loading = true end)
      store:advance(150)
      store:receive({ type = "loaded", items = {} }, function(s) s.loading = false end)
      store:finish()
    end)
  end)

  describe("selecting a post", function()
    it("sends openPost from the posts child, the view model unchanged", function()
      local store = T.store("user")
      store:send({ type = "loadPosts", userId = 1 }, function(s) s.loading = true end)
      store:advance(150)
      store:receive({ type = "loaded", items = POSTS }, function(s)
        s.titles, s.loading = TITLES, false
      end)
      store:send({ type = "selectPost", id = 11 })
      store:receiveEffect({ type = "openPost", id = 11 })
      store:send({ type = "selectPost", id = 10 })
      store:receiveEffect({ type = "openPost", id = 10 })
      store:finish()
    end)
  end)

  describe("failures", function()
    it("shows the profile service's error for an unknown user", function()
      local store = T.store("user")
      store:send({ type = "loadProfile", userId = 7 }, function(s) s.loading = true end)
      store:advance(100)
      store:receive({ type = "failed", message = "no user 7" }, function(s)
        s.error, s.loading = "no user 7", false
      end)
      store:finish()
    end)

    it("keeps loading while the posts load after the profile failed", function()
      local store = T.store("user")
      store:send({ type = "loadProfile", userId = 7 }, function(s) s.loading = true end)
      store:send({ type = "loadPosts", userId = 2 })
      store:advance(100)
      store:receive({ type = "failed", message = "no user 7" }, function(s) s.error = "no user 7" end)
      store:advance(50)
      store:receive({ type = "loaded", items = {} }, function(s) s.loading = false end)
      store:finish()
    end)

    it("clears the profile error when the profile loads again", function()
      local calls = 0
      local store = T.store("user", { services = {
        readProfile = function(userId)
          calls = calls + 1
          if calls == 1 then return mf.fail("offline") end
          return mf.timer(20, { name = "Ada " .. userId, bio = "Back online." })
        end,
      } })
      store:send({ type = "loadProfile", userId = 1 }, function(s) s.error = "offline" end)
      store:send({ type = "loadProfile", userId = 1 }, function(s) s.error, s.loading = nil, true end)
      store:advance(20)
      store:receive({ type = "loaded", user = { name = "Ada 1", bio = "Back online." } }, function(s)
        s.name, s.bio, s.loading = "Ada 1", "Back online.", false
      end)
      store:finish()
    end)

    it("shows a posts failure, the profile's error first", function()
      local store = T.store("user", { services = {
        readPosts = function() return mf.timer(10):flatMap(function() return mf.fail("posts down") end) end,
        readProfile = function() return mf.timer(30):flatMap(function() return mf.fail("profile down") end) end,
      } })
      store:send({ type = "loadPosts", userId = 1 }, function(s) s.loading = true end)
      store:send({ type = "loadProfile", userId = 1 })
      store:advance(10)
      store:receive({ type = "failed", message = "posts down" }, function(s) s.error = "posts down" end)
      store:advance(20)
      store:receive({ type = "failed", message = "profile down" }, function(s)
        s.error, s.loading = "profile down", false
      end)
      store:finish()
    end)

    it("drops an action the route sends nowhere, saying so in the log", function()
      local store = T.store("user")
      store:send({ type = "nope" })
      assert.are.equal("user: route dropped action 'nope' (it returned nil)", store.logs[1].message)
      store:finish()
    end)

    it("refuses a routed action the child's schema rejects", function()
      local store = T.store("user")
      local ok, err = pcall(store.send, store, { type = "loadProfile", userId = "1" })
      assert.is_false(ok)
      assert.matches([[action 'load': field 'userId' must be an integer (got string "1")]], err, 1, true)
      ok, err = pcall(store.send, store, { type = "selectPost" })
      assert.is_false(ok)
      assert.matches("action 'select': missing field 'id' (integer)", err, 1, true)
      assert.same({ name = "", bio = "", titles = {}, loading = false }, store.state)
      store:finish()
    end)
  end)
end)
