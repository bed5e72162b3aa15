-- checkout explored: random runs drawn from the actions it declares (react clears the cart on
-- each receipt as it would in the app), its invariants checked after every step.
local T = require "moonflow.test"

describe("checkout explored", function()
  it("holds its invariants", function()
    T.explore("checkout", {
      seed = 1, runs = 50, quiet = true,
      gen = {
        add = { sku = T.gen.oneOf { "pen", "ink" }, name = T.gen.oneOf { "Pen" }, price = T.gen.oneOf { 150, 300 } },
        remove = { sku = T.gen.oneOf { "pen", "ink" } },
        setQty = { sku = T.gen.oneOf { "pen", "ink" }, qty = T.gen.oneOf { 0, 1, 3 } },
      },
    })
  end)
end)
