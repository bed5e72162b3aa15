-- payment's bug by hand: the steps that break `chargedOnce` on the buggy screen hold on the fix.
local T = require "moonflow.test"
local here = debug.getinfo(1, "S").source:match("^@(.+)/spec/[^/]+$")

local function steps(screen)
  -- The first charge is made but answers 3 s late: the screen tries again after 2 s.
  local store = T.store(screen, { exhaustive = false, services = T.faults(screen, { [1] = 3000 }) })
  store:send({ type = "add" })
  store:send({ type = "add" })
  store:send({ type = "address", text = "1 Main St" })
  store:send({ type = "terms", accepted = true })
  store:send({ type = "review" })
  store:send({ type = "confirm" })
  store:advance(2000)
  store:advance(100)
  store:checkInvariants()
  store:advance(3000)
  store:checkInvariants()
end

describe("payment", function()
  it("breaks chargedOnce: a late first charge is charged again", function()
    local ok, err = pcall(steps, here)
    assert.is_false(ok, "the buggy screen held its invariants")
    assert.truthy(tostring(err):find("invariant 'chargedOnce' does not hold", 1, true), tostring(err))
  end)

  it("holds once fixed, through the same steps and an exploration", function()
    steps(here .. "/fixed")
    T.explore(here .. "/fixed", { seed = 1, runs = 20, quiet = true })
  end)
end)
