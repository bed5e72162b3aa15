-- bundle's bug by hand: the steps that break `pricedByTier` on the buggy screen hold on the fix.
local T = require "moonflow.test"
local here = debug.getinfo(1, "S").source:match("^@(.+)/spec/[^/]+$")

local function steps(screen)
  -- The quote service's second call (the one for 7) fails.
  local store = T.store(screen, { exhaustive = false, services = T.faults(screen, { [2] = "fail" }) })
  store:send({ type = "member", on = true })
  store:send({ type = "qty", n = 7 })
  store:advance(100)
  store:checkInvariants()
end

describe("bundle", function()
  it("breaks pricedByTier: a member's 7 priced while the service is down", function()
    local ok, err = pcall(steps, here)
    assert.is_false(ok, "the buggy screen held its invariants")
    assert.truthy(tostring(err):find("invariant 'pricedByTier' does not hold", 1, true), tostring(err))
  end)

  it("holds once fixed, through the same steps and an exploration", function()
    steps(here .. "/fixed")
    T.explore(here .. "/fixed", { seed = 1, runs = 20, quiet = true })
  end)
end)
