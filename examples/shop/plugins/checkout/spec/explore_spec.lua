-- checkout explored: random runs drawn from the actions it declares (react clears the cart on
-- each receipt as it would in the app), its invariants checked after every step.
local T = require "moonflow.test"
local mf = require "moonflow"

describe("checkout explored", function()
  it("holds its invariants", function()
    T.explore("checkout", {
      seed = 1, runs = 50, quiet = true,
      -- The app's payment provider, stubbed: it answers after 300 ms.
      services = { charge = function(amount) return mf.timer(300, { id = "r-" .. amount, amount = amount }) end },
      gen = {
        add = { sku = T.gen.oneOf { "pen", "ink" }, name = T.gen.oneOf { "Pen" }, price = T.gen.oneOf { 150, 300 } },
        remove = { sku = T.gen.oneOf { "pen", "ink" } },
        setQty = { sku = T.gen.oneOf { "pen", "ink" }, qty = T.gen.oneOf { 0, 1, 3 } },
      },
    })
  end)
end)
