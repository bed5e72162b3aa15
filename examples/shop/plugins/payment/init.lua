-- payment: `pay` charges the amount through the `charge` service and, once paid, sends the
-- outward `receipt` effect. `charge` is the app's: a Swift service (the payment provider,
-- examples/shop/Sources/ShopApp.swift) that a spec or a Swift test stubs.
local mf = require "moonflow"

return mf.feature {
  name = "payment",
  state = { status = { "enum", "idle", "paying", "paid" }, receipt = "string?", error = "string?" },
  initial = { status = "idle" },
  actions = { pay = { amount = "integer" } },
  mutations = { paying = {}, paid = { id = "string", amount = "integer" }, declined = { reason = "string" } },
  outputs = { receipt = { id = "string", amount = "integer" } },
  strategy = { pay = "exhaust" },  -- a second tap while paying charges nothing

  handle = function(action, _, env)
    return env.services.charge(action.amount)
      :map(function(r) return { type = "paid", id = r.id, amount = r.amount } end)
      -- A charge that fails leaves the cart as it was and says why; paying again may work.
      :catchError(function(err) return mf.just { type = "declined", reason = tostring(err) } end)
      :startWith({ type = "paying" })
  end,

  reduce = function(state, m)
    if m.type == "paying" then
      state.status, state.error = "paying", nil
      return state
    elseif m.type == "declined" then
      state.status, state.error = "idle", m.reason
      return state
    end
    state.status, state.receipt = "paid", m.id
    return state, { type = "receipt", id = m.id, amount = m.amount }
  end,
}
