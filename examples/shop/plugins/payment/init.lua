-- payment: `pay` charges the amount through the `charge` service (here a timer standing in for
-- a payment provider; an app registers a Swift service of that name, a spec stubs it) and,
-- once paid, sends the outward `receipt` effect.
local mf = require "moonflow"

return mf.feature {
  name = "payment",
  state = { status = { "enum", "idle", "paying", "paid" }, receipt = "string?" },
  initial = { status = "idle" },
  actions = { pay = { amount = "integer" } },
  mutations = { paying = {}, paid = { id = "string", amount = "integer" } },
  outputs = { receipt = { id = "string", amount = "integer" } },
  strategy = { pay = "exhaust" },  -- a second tap while paying charges nothing

  services = {
    charge = function(amount) return mf.timer(300, { id = "r-" .. amount, amount = amount }) end,
  },

  handle = function(action, _, env)
    return env.services.charge(action.amount)
      :map(function(r) return { type = "paid", id = r.id, amount = r.amount } end)
      :startWith({ type = "paying" })
  end,

  reduce = function(state, m)
    if m.type == "paying" then
      state.status = "paying"
      return state
    end
    state.status, state.receipt = "paid", m.id
    return state, { type = "receipt", id = m.id, amount = m.amount }
  end,
}
