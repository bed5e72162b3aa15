-- pager's bug by hand: the steps that break `pageInRange` on the buggy screen hold on the fix.
local T = require "moonflow.test"
local here = debug.getinfo(1, "S").source:match("^@(.+)/spec/[^/]+$")

local function steps(screen)
  local store = T.store(screen, { exhaustive = false })
  store:send({ type = "next" })
  store:send({ type = "next" })
  store:send({ type = "next" })
  store:checkInvariants()
end

describe("pager", function()
  it("breaks pageInRange: a third next goes to page 4", function()
    local ok, err = pcall(steps, here)
    assert.is_false(ok, "the buggy screen held its invariants")
    assert.truthy(tostring(err):find("invariant 'pageInRange' does not hold", 1, true), tostring(err))
  end)

  it("holds once fixed, through the same steps and an exploration", function()
    steps(here .. "/fixed")
    T.explore(here .. "/fixed", { seed = 1, runs = 20, quiet = true })
  end)
end)
