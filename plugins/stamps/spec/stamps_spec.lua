-- stamps: env.now, env.uuid and env.random are the feature's dependencies. The test store
-- runs them on its virtual clock from 2026-01-01T00:00:00Z and its seed; `env` stubs them.
local mf = require "moonflow"
local T = require "moonflow.test"

local JAN1 = 1767225600 * 1000  -- 2026-01-01T00:00:00Z, in ms

describe("stamps", function()
  it("stamps a note with the store's clock and an id of the store's seed", function()
    local store = T.store("stamps")
    store:advance(90000)
    store:send({ type = "add", text = "milk" }, function(s)
      local note = store.state.notes[1]
      assert.are.equal(JAN1 + 90000, note.at)
      assert.truthy(note.id:match("^%x%x%x%x%x%x%x%x%-%x%x%x%x%-4%x%x%x%-[89ab]%x%x%x%-%x+$"), note.id)
      s.notes = { { id = note.id, text = "milk", at = JAN1 + 90000 } }
    end)
    -- Another store of the same seed draws the same id; another seed, another.
    local again = T.store("stamps")
    again:advance(90000)
    again:send({ type = "add", text = "milk" }, function(s) s.notes = store.state.notes end)
    local other = T.store("stamps", { seed = 7 })
    other:send({ type = "add", text = "milk" }, function(s) s.notes = other.state.notes end)
    assert.are_not.equal(store.state.notes[1].id, other.state.notes[1].id)
  end)

  it("takes stubs for now, uuid and random", function()
    local ids = 0
    local store = T.store("stamps", { env = {
      now = function() return 1000 end,
      uuid = function() ids = ids + 1; return "id-" .. ids end,
      random = function(n) return n end,  -- always the last note
    } })
    store:send({ type = "add", text = "milk" }, function(s) s.notes = { { id = "id-1", text = "milk", at = 1000 } } end)
    store:send({ type = "add", text = "eggs" }, function(s)
      s.notes[2] = { id = "id-2", text = "eggs", at = 1000 }
    end)
    store:send({ type = "pick" }, function(s) s.picked = "id-2" end)
  end)

  it("names a dependency it does not have", function()
    local ok, err = pcall(T.store, "stamps", { env = { today = function() return 1 end } })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("opts.env.today is not a dependency of env; stub now, uuid or random", 1, true), err)
  end)

  it("follows the clock with the plain os.time and os.date too", function()
    local store = T.store(mf.feature {
      name = "clocked",
      initial = { at = 0, day = "" },
      actions = { stamp = {} },
      mutations = { stamp = { at = "integer", day = "string" } },
      handle = function() return { type = "stamp", at = os.time(), day = os.date("!%Y-%m-%d %H:%M") } end,
      reduce = function(state, m) state.at, state.day = m.at, m.day; return state end,
    })
    store:send({ type = "stamp" }, function(s) s.at, s.day = 1767225600, "2026-01-01 00:00" end)
    store:advance(600000)
    store:send({ type = "stamp" }, function(s) s.at, s.day = 1767226200, "2026-01-01 00:10" end)
  end)
end)
