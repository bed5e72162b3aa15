-- user.profile: the seed's ProfileInteractor. `load` goes through the reducer,
-- which returns an internal `fetchProfile` effect; its handler calls the
-- profile service and feeds `loaded` or `failed` back into the loop.
local mf = require "moonflow"

local profiles = {
  [1] = { id = 1, name = "Ada Lovelace", bio = "Wrote the first program." },
}

return mf.feature {
  name = "profile",
  initial = { status = "initialized" },
  state = {
    status = { "enum", "initialized", "loading", "loaded", "failed" },
    name = "string?",
    bio = "string?",
    error = "string?",
  },
  actions = { load = { userId = "integer" } },
  mutations = {
    load = { userId = "integer" },
    loaded = { user = "table" },
    failed = { message = "string" },
  },

  handle = function(action)
    return { type = "load", userId = action.userId }
  end,

  reduce = function(state, m)
    if m.type == "load" then
      if state.status == "loading" then return state end
      state.status, state.error = "loading", nil
      return state, { type = "fetchProfile", userId = m.userId }
    elseif m.type == "loaded" then
      state.status, state.name, state.bio = "loaded", m.user.name, m.user.bio
    elseif m.type == "failed" then
      state.status, state.error = "failed", m.message
    end
    return state
  end,

  effects = {
    fetchProfile = function(effect, _, env)
      return env.services.readProfile(effect.userId)
        :map(function(user) return { type = "loaded", user = user } end)
        :catchError(function(err) return mf.just { type = "failed", message = tostring(err) } end)
    end,
  },

  services = {
    -- 100 ms of pretend network; unknown users fail.
    readProfile = function(userId)
      local user = profiles[userId]
      if not user then return mf.timer(100):flatMap(function() return mf.fail("no user " .. userId) end) end
      return mf.timer(100, user)
    end,
  },
}
