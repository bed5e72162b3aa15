-- signup: three field features (name, email, password) validate their own
-- input; the folded form state enables submit only when all are valid. An
-- allowed submit sends the outward `signedUp` effect once; a refused one
-- counts a refusal. Unknown fields and bad values are refused.
local T = require "moonflow.test"

local function initial()
  return {
    fields = {
      name = { value = "", valid = false },
      email = { value = "", valid = false },
      password = { value = "", valid = false },
    },
    valid = false, submitEnabled = false, submitted = false, refusals = 0,
  }
end

local function edit(field, value) return { type = "edit", field = field, value = value } end

-- Fills the three fields validly.
local function fill(store)
  store:send(edit("name", "Ada"), function(s) s.fields.name = { value = "Ada", valid = true } end)
  store:send(edit("email", "ada@example.com"), function(s)
    s.fields.email = { value = "ada@example.com", valid = true }
  end)
  store:send(edit("password", "analytical"), function(s)
    s.fields.password = { value = "analytical", valid = true }
    s.valid, s.submitEnabled = true, true
  end)
end

describe("signup", function()
  it("starts with empty, invalid fields and no problems shown", function()
    local store = T.store("signup")
    assert.same(initial(), store.state)
    store:finish()
  end)

  describe("validation", function()
    it("shows a field's problem once it was edited", function()
      local store = T.store("signup")
      store:send(edit("name", ""), function(s)
        s.fields.name.problem = "enter your name"
      end)
      store:send(edit("name", "A"), function(s) s.fields.name = { value = "A", valid = true } end)
      store:finish()
    end)

    it("wants an email like ada@example.com", function()
      local store = T.store("signup")
      local problem = "enter an email like ada@example.com"
      store:send(edit("email", "ada@example"), function(s)
        s.fields.email = { value = "ada@example", valid = false, problem = problem }
      end)
      store:send(edit("email", "ada lovelace@example.com"), function(s)
        s.fields.email.value = "ada lovelace@example.com"
      end)
      store:send(edit("email", "ada@exam ple.com"), function(s) s.fields.email.value = "ada@exam ple.com" end)
      store:send(edit("email", "@example.com"), function(s) s.fields.email.value = "@example.com" end)
      store:send(edit("email", "ada@example.com"), function(s)
        s.fields.email = { value = "ada@example.com", valid = true }
      end)
      store:finish()
    end)

    it("wants a password of at least 8 characters", function()
      local store = T.store("signup")
      store:send(edit("password", "short"), function(s)
        s.fields.password = { value = "short", valid = false, problem = "use at least 8 characters" }
      end)
      store:send(edit("password", "1234567"), function(s) s.fields.password.value = "1234567" end)
      store:send(edit("password", "12345678"), function(s)
        s.fields.password = { value = "12345678", valid = true }
      end)
      store:finish()
    end)

    it("enables submit only while every field is valid", function()
      local store = T.store("signup")
      fill(store)
      store:send(edit("email", "nope"), function(s)
        s.fields.email = { value = "nope", valid = false, problem = "enter an email like ada@example.com" }
        s.valid, s.submitEnabled = false, false
      end)
      store:send(edit("email", "ada@example.com"), function(s)
        s.fields.email = { value = "ada@example.com", valid = true }
        s.valid, s.submitEnabled = true, true
      end)
      store:finish()
    end)
  end)

  describe("submit", function()
    it("sends signedUp with the name and email when allowed", function()
      local store = T.store("signup")
      fill(store)
      store:send({ type = "submit" }, function(s) s.submitted, s.submitEnabled = true, false end)
      store:receiveEffect({ type = "signedUp", name = "Ada", email = "ada@example.com" })
      store:finish()
    end)

    it("does nothing on a second submit", function()
      local store = T.store("signup")
      fill(store)
      store:send({ type = "submit" }, function(s) s.submitted, s.submitEnabled = true, false end)
      store:receiveEffect({ type = "signedUp", name = "Ada", email = "ada@example.com" })
      store:send({ type = "submit" })
      store:finish() -- no second signedUp
    end)

    it("keeps submit disabled after signing up, even when editing", function()
      local store = T.store("signup")
      fill(store)
      store:send({ type = "submit" }, function(s) s.submitted, s.submitEnabled = true, false end)
      store:receiveEffect({ type = "signedUp", name = "Ada", email = "ada@example.com" })
      store:send(edit("name", "Grace"), function(s) s.fields.name.value = "Grace" end)
      store:send({ type = "submit" })
      store:finish()
    end)

    it("counts a refused submit and sends nothing", function()
      local store = T.store("signup")
      store:send(edit("name", "Ada"), function(s) s.fields.name = { value = "Ada", valid = true } end)
      store:send({ type = "submit" }, function(s) s.refusals = 1 end)
      store:send({ type = "submit" }, function(s) s.refusals = 2 end)
      store:finish()
    end)

    it("signs up after being refused once the form is fixed", function()
      local store = T.store("signup")
      store:send(edit("name", "Ada"), function(s) s.fields.name = { value = "Ada", valid = true } end)
      store:send(edit("email", "ada@example.com"), function(s)
        s.fields.email = { value = "ada@example.com", valid = true }
      end)
      store:send(edit("password", "short"), function(s)
        s.fields.password = { value = "short", valid = false, problem = "use at least 8 characters" }
      end)
      store:send({ type = "submit" }, function(s) s.refusals = 1 end)
      store:send(edit("password", "analytical"), function(s)
        s.fields.password = { value = "analytical", valid = true }
        s.valid, s.submitEnabled = true, true
      end)
      store:send({ type = "submit" }, function(s) s.submitted, s.submitEnabled = true, false end)
      store:receiveEffect({ type = "signedUp", name = "Ada", email = "ada@example.com" })
      store:finish()
    end)
  end)

  describe("failures", function()
    it("refuses an edit of an unknown field", function()
      local store = T.store("signup")
      store:sendRefused(edit("phone", "1"),
        "signup: route sends action 'edit' to unknown child 'phone'; children: email, form, name, password")
      assert.same(initial(), store.state)
      store:finish()
    end)

    it("drops an action the route sends nowhere, saying so in the log", function()
      local store = T.store("signup")
      store:send({ type = "reset" })
      assert.are.equal("signup: route dropped action 'reset' (it returned nil)", store.logs[1].message)
      store:finish()
    end)

    it("refuses an edit whose value is not a string", function()
      local store = T.store("signup")
      store:sendRefused(edit("name", 5), "action 'change': field 'value' must be a string (got integer 5)")
      store:sendRefused({ type = "edit", field = "email" }, "action 'change': missing field 'value' (string)")
      assert.same(initial(), store.state)
      store:finish()
    end)
  end)
end)
