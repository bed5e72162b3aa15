-- user explored: random loads and selections (an mf.compose declares no actions: they are given
-- here, as its route takes them), its invariants checked after every step; 200 runs of 50 steps.
local T = require "moonflow.test"

describe("user explored", function()
  for part = 0, 3 do
    it(("holds its invariants in runs %d to %d"):format(part * 50 + 1, part * 50 + 50), function()
      T.explore("user", {
        seed = 1, runs = 50, firstRun = part * 50 + 1, quiet = true,
        actions = { loadProfile = { userId = "integer" }, loadPosts = { userId = "integer" }, selectPost = { id = "integer" } },
        gen = {
          loadProfile = { userId = T.gen.oneOf { 1, 2 } },
          loadPosts = { userId = T.gen.oneOf { 1, 2 } },
          selectPost = { id = T.gen.oneOf { 10, 11 } },
        },
      })
    end)
  end
end)
