-- wizard's bug by hand: the steps that break `totalAddsUp` on the buggy screen hold on the fix.
local T = require "moonflow.test"
local here = debug.getinfo(1, "S").source:match("^@(.+)/spec/[^/]+$")

local function steps(screen)
  local store = T.store(screen, { exhaustive = false })
  for _ = 1, 7 do
    store:send({ type = "choose", option = "basic" })
    store:send({ type = "next" })
  end
  store:send({ type = "choose", option = "plus" })  -- extras
  store:checkInvariants()
  store:send({ type = "choose", option = "pro" })   -- extras again: plus is replaced
  store:checkInvariants()
end

describe("wizard", function()
  it("breaks totalAddsUp: choosing twice at the eighth step counts both", function()
    local ok, err = pcall(steps, here)
    assert.is_false(ok, "the buggy screen held its invariants")
    assert.truthy(tostring(err):find("invariant 'totalAddsUp' does not hold", 1, true), tostring(err))
  end)

  it("holds once fixed, through the same steps and an exploration", function()
    steps(here .. "/fixed")
    T.explore(here .. "/fixed", { seed = 1, runs = 20, quiet = true })
  end)
end)
