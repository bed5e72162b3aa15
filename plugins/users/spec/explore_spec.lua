-- users explored: random runs of its declared actions (T.explore), its invariants checked after
-- every step; 200 runs of 50 steps in four parts, so each test keeps well within its time limit.
-- The seed is fixed so the suite draws the same runs every time; `moonflow test --seed N` tries others.
local T = require "moonflow.test"

describe("users explored", function()
  for part = 0, 3 do
    it(("holds its invariants in runs %d to %d"):format(part * 50 + 1, part * 50 + 50), function()
      T.explore("users", { seed = 1, runs = 50, firstRun = part * 50 + 1, quiet = true })
    end)
  end
end)
