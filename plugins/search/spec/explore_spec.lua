-- search explored: random runs of typed queries (T.explore), its invariants checked after every
-- step; 200 runs of 50 steps in four parts, so each test keeps well within its time limit.
local T = require "moonflow.test"

describe("search explored", function()
  for part = 0, 3 do
    it(("holds its invariants in runs %d to %d"):format(part * 50 + 1, part * 50 + 50), function()
      T.explore("search", {
        seed = 1, runs = 50, firstRun = part * 50 + 1, quiet = true,
        -- "fail" is the backend's failing query; the others match some fruits, or none.
        gen = { query = { text = T.gen.oneOf { "", "a", "ap", "berry", "fail", T.gen.string() } } },
      })
    end)
  end
end)
