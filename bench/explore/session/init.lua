-- session (medium: a timer crossing): a signed-in session that ends after a minute without
-- activity. `signIn` starts it, `touch` (any activity) moves its end a minute on, `signOut`
-- ends it; when the minute is up the session expires.
-- The bug: `touch` starts a new timer but the first one still runs, and expires the session
-- at its old end, while the screen says it lasts longer.
local mf = require "moonflow"

local IDLE_MS = 60000

return mf.feature {
  name = "session",
  initial = { status = "signedOut" },
  state = {
    status = { "enum", "signedOut", "active", "expired" },
    endsAt = "integer?",     -- ms on the clock: when the session expires
    expiredAt = "integer?",
  },
  actions = { signIn = {}, touch = {}, signOut = {} },
  mutations = {
    started = { endsAt = "integer" },
    moved = { endsAt = "integer" },
    expired = { at = "integer", endsAt = "integer" },
    ended = {},
  },
  invariants = {
    expiresOnTime = function(s)
      if s.status == "expired" then return s.expiredAt >= s.endsAt, ("%d < %d"):format(s.expiredAt, s.endsAt) end
    end,
  },

  handle = function(action, state, env)
    local function expiry(endsAt)
      return env.cancellable("expiry", mf.timer(IDLE_MS):map(function()
        return { type = "expired", at = env.now(), endsAt = endsAt }
      end))
    end
    if action.type == "signIn" then
      if state.status == "active" then return nil end
      local endsAt = env.now() + IDLE_MS
      return mf.concat(env.cancel("expiry"), mf.just { type = "started", endsAt = endsAt }, expiry(endsAt))
    elseif action.type == "touch" then
      if state.status ~= "active" then return nil end
      local endsAt = env.now() + IDLE_MS
      return mf.concat(mf.just { type = "moved", endsAt = endsAt }, expiry(endsAt))
    elseif action.type == "signOut" then
      return mf.concat(env.cancel("expiry"), mf.just { type = "ended" })
    end
  end,

  reduce = function(state, m)
    if m.type == "started" or m.type == "moved" then
      state.status, state.endsAt, state.expiredAt = "active", m.endsAt, nil
    elseif m.type == "expired" then
      if state.status == "active" then state.status, state.expiredAt = "expired", m.at end
    elseif m.type == "ended" then
      state.status, state.endsAt, state.expiredAt = "signedOut", nil, nil
    end
    return state
  end,
}
