-- checkout: the cart, the address and the payment on one screen. The payment's receipt
-- clears the cart: `react` turns that child's effect into an action for another child, in
-- Lua, so a spec tests it (spec/checkout_spec.lua); the receipt then goes out to the app.
local mf = require "moonflow"

local Line = { sku = "string", name = "string", price = "integer", qty = "integer" }

return mf.compose {
  name = "checkout",
  state = {
    lines = { "list", of = Line },
    total = "integer",
    address = "string",
    payment = { "enum", "idle", "paying", "paid" },
    receipt = "string?",
    declined = "string?",
  },
  children = { cart = "cart", address = "address", payment = "payment" },

  -- Checked after every step of `T.explore` (spec/explore_spec.lua).
  invariants = {
    totalIsTheLinesSum = function(s)
      local sum = 0
      for _, line in ipairs(s.lines) do sum = sum + line.price * line.qty end
      return s.total == sum
    end,
    paidMeansAReceipt = function(s) return s.payment ~= "paid" or s.receipt ~= nil end,
    declinedMeansUnpaid = function(s) return s.declined == nil or s.payment == "idle" end,
  },

  -- What the screen sends, checked before `route` as a feature's actions are.
  actions = {
    add = { sku = "string", name = "string", price = "integer" },
    remove = { sku = "string" },
    setQty = { sku = "string", qty = "integer" },
    setAddress = { name = "string?", street = "string?", city = "string?" },
    pay = {},
  },

  route = function(action, state)
    if action.type == "setAddress" then
      return "address", { type = "set", name = action.name, street = action.street, city = action.city }
    elseif action.type == "pay" then
      return "payment", { type = "pay", amount = state.total }
    end
    return "cart", action
  end,

  -- The receipt empties the cart, then goes out (the app shows the confirmation).
  react = function(child, effect)
    if child == "payment" and effect.type == "receipt" then
      return "cart", { type = "clear" }, mf.out
    end
  end,

  combine = function(s)
    local total = 0
    for _, line in ipairs(s.cart.lines) do total = total + line.price * line.qty end
    local a = s.address
    return {
      lines = s.cart.lines,
      total = total,
      address = a.name == "" and "" or ("%s, %s, %s"):format(a.name, a.street, a.city),
      payment = s.payment.status,
      receipt = s.payment.receipt,
      declined = s.payment.error,
    }
  end,
}
