-- signup.form: the submit button's feature. The parent routes `submit` here
-- with `allowed` read from the folded form state; an allowed submit sends
-- the outward `signedUp` effect, a refused one records why.
local mf = require "moonflow"

return mf.feature {
  name = "form",
  initial = { submitted = false, refusals = 0 },
  state = { submitted = "boolean", refusals = "integer" },
  -- `signedUp` goes out to the host.
  outputs = { signedUp = { name = "string", email = "string" } },
  actions = { submit = { allowed = "boolean", name = "string", email = "string" } },
  mutations = {
    submitted = { name = "string", email = "string" },
    refused = {},
  },

  handle = function(action, state)
    if state.submitted then return nil end  -- a second submit does nothing
    if action.allowed then
      return { type = "submitted", name = action.name, email = action.email }
    end
    return { type = "refused" }
  end,

  reduce = function(state, m)
    if m.type == "submitted" then
      state.submitted = true
      return state, { type = "signedUp", name = m.name, email = m.email }
    end
    state.refusals = state.refusals + 1
    return state
  end,
}
