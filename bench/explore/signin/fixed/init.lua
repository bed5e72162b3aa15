-- signin (easy): a sign-in form. `email` and `password` are keystrokes into the fields,
-- `submit` sends them to the `auth` service (a fake backend, 100 ms) when the form is valid.
-- Fixed: an email is valid only with an `@` in it.
local mf = require "moonflow"

local function auth(email)
  return mf.timer(100):map(function() return "token-" .. email end)
end

local function valid(state)
  return state.email:find("@", 1, true) ~= nil and state.password ~= ""
end

return mf.feature {
  name = "signin",
  initial = { email = "", password = "", status = "editing" },
  state = {
    email = "string",
    password = "string",
    status = { "enum", "editing", "sending", "signedIn", "failed" },
    sentEmail = "string?",
    token = "string?",
  },
  actions = { email = { value = "string" }, password = { value = "string" }, submit = {} },
  mutations = {
    typed = { field = { "enum", "email", "password" }, value = "string" },
    sending = { email = "string" },
    signedIn = { token = "string" },
    failed = { message = "string" },
  },
  strategy = { submit = "exhaust" },
  services = { auth = auth },
  invariants = {
    sentOnlyAnEmail = function(s) return s.sentEmail == nil or s.sentEmail:find("@", 1, true) ~= nil, s.sentEmail end,
  },

  handle = function(action, state, env)
    if action.type == "email" or action.type == "password" then
      return { type = "typed", field = action.type, value = action.value }
    elseif action.type == "submit" then
      if state.status == "sending" or not valid(state) then return nil end
      return env.services.auth(state.email)
        :map(function(token) return { type = "signedIn", token = token } end)
        :startWith { type = "sending", email = state.email }
        :catchError(function(err) return mf.just { type = "failed", message = tostring(err) } end)
    end
  end,

  reduce = function(state, m)
    if m.type == "typed" then
      state[m.field] = m.value
    elseif m.type == "sending" then
      state.status, state.sentEmail = "sending", m.email
    elseif m.type == "signedIn" then
      state.status, state.token = "signedIn", m.token
    elseif m.type == "failed" then
      state.status = "failed"
    end
    return state
  end,
}
