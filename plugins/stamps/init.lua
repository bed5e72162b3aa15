-- stamps: time and randomness as inputs. Each note gets its id from `env.uuid()` and its
-- time from `env.now()`; `pick` chooses a note with `env.random(n)`. On the virtual clock
-- (`moonflow run --clock virtual`, the test store) these follow the clock from
-- 2026-01-01T00:00:00Z and the run's seed, so every run is the same; a spec stubs them
-- (`T.store("stamps", { env = { now = ..., uuid = ..., random = ... } })`).
local mf = require "moonflow"

return mf.feature {
  name = "stamps",
  initial = { notes = {}, picked = "" },
  state = {
    notes = { "list", of = { id = "string", text = "string", at = "integer" } },
    picked = "string", -- the id of the note `pick` chose ("" before)
  },
  actions = {
    add = { text = "string" },
    pick = {},
  },
  mutations = {
    added = { id = "string", text = "string", at = "integer" },
    picked = { id = "string" },
  },

  handle = function(action, state, env)
    if action.type == "add" then
      return { type = "added", id = env.uuid(), text = action.text, at = env.now() }
    elseif action.type == "pick" and #state.notes > 0 then
      return { type = "picked", id = state.notes[env.random(#state.notes)].id }
    end
  end,

  reduce = function(state, m)
    if m.type == "added" then
      state.notes[#state.notes + 1] = { id = m.id, text = m.text, at = m.at }
    elseif m.type == "picked" then
      state.picked = m.id
    end
    return state
  end,
}
