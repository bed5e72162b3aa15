-- checkout explored: random carts, promo codes and payments (T.explore), its invariants checked
-- after every step; 200 runs of 50 steps in four parts. The explorer found that a failing promo
-- service ended the check with an error (now the `promoFailed` banner).
local T = require "moonflow.test"

describe("checkout explored", function()
  for part = 0, 3 do
    it(("holds its invariants in runs %d to %d"):format(part * 50 + 1, part * 50 + 50), function()
      T.explore("checkout", {
        seed = 1, runs = 50, firstRun = part * 50 + 1, quiet = true,
        weights = { add = 3, pay = 2 },
        gen = {
          add = { sku = T.gen.oneOf { "tea", "cake", "jam", "bread" }, qty = T.gen.oneOf { 1, 2, 5 } },
          drop = { sku = T.gen.oneOf { "tea", "cake", "jam" } },
          promo = { code = T.gen.oneOf { "SPRING", "WELCOME", "", "SPR", "nope" } },
          pay = { card = T.gen.oneOf { "visa", "declined", "flaky", "slow" } },
        },
      })
    end)
  end
end)
