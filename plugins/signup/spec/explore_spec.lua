-- signup explored: random edits and submits (an mf.compose declares no actions: they are given
-- here, as its route takes them), its invariants checked after every step; 200 runs of 50 steps.
local T = require "moonflow.test"

describe("signup explored", function()
  for part = 0, 3 do
    it(("holds its invariants in runs %d to %d"):format(part * 50 + 1, part * 50 + 50), function()
      T.explore("signup", {
        seed = 1, runs = 50, firstRun = part * 50 + 1, quiet = true,
        actions = { edit = { field = { "enum", "name", "email", "password" }, value = "string" }, submit = {} },
        gen = { edit = { value = T.gen.oneOf { "", "Ada", "ada@example.com", "correct horse", "x@y", T.gen.string() } } },
      })
    end)
  end
end)
