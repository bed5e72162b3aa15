-- signup: the VIPER with Reducer and State seed. One field feature per input
-- (name, email, password), each with its own validation state, folded by
-- `combine` -- the seed's reducer over child states -- into the form's state:
-- `submitEnabled` is true only when every field is valid.
local mf = require "moonflow"
local field = require "signup.field"

local rules = {
  name = function(v) if #v == 0 then return "enter your name" end end,
  email = function(v) if not v:match("^[^@%s]+@[^@%s]+%.[^@%s]+$") then return "enter an email like ada@example.com" end end,
  password = function(v) if #v < 8 then return "use at least 8 characters" end end,
}

-- One field of the folded form state: a problem shows once the field was touched.
local FIELD = { value = "string", valid = "boolean", problem = "string?" }

return mf.compose {
  name = "signup",
  -- What `combine` makes of the children's states.
  state = {
    fields = { name = FIELD, email = FIELD, password = FIELD },
    valid = "boolean",
    submitEnabled = "boolean",
    submitted = "boolean",
    refusals = "integer",
  },
  children = {
    name = field("name", rules.name),
    email = field("email", rules.email),
    password = field("password", rules.password),
    form = require "signup.form",
  },

  invariants = {
    submitNeedsValidFields = function(s) return not s.submitEnabled or s.valid end,
  },

  -- `state` is the folded form state below: submit carries whether it is allowed.
  route = function(action, state)
    if action.type == "edit" then
      return action.field, { type = "change", value = action.value }
    elseif action.type == "submit" then
      return "form", {
        type = "submit", allowed = state.submitEnabled,
        name = state.fields.name.value, email = state.fields.email.value,
      }
    end
  end,

  combine = function(s)
    local fields, valid = {}, true
    for _, name in ipairs { "name", "email", "password" } do
      local f = s[name]
      fields[name] = { value = f.value, valid = f.valid, problem = f.touched and f.problem or nil }
      valid = valid and f.valid
    end
    return {
      fields = fields,
      valid = valid,
      submitEnabled = valid and not s.form.submitted,
      submitted = s.form.submitted,
      refusals = s.form.refusals,
    }
  end,
}
