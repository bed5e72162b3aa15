-- session's bug by hand: the steps that break `expiresOnTime` on the buggy screen hold on the fix.
local T = require "moonflow.test"
local here = debug.getinfo(1, "S").source:match("^@(.+)/spec/[^/]+$")

local function steps(screen)
  local store = T.store(screen, { exhaustive = false })
  store:send({ type = "signIn" })
  store:advance(30000)
  store:send({ type = "touch" })
  store:advance(30000)  -- the first minute is up; the session should last until 90 s
  store:checkInvariants()
  store:advance(30000)
  store:checkInvariants()
end

describe("session", function()
  it("breaks expiresOnTime: the first timer expires a touched session", function()
    local ok, err = pcall(steps, here)
    assert.is_false(ok, "the buggy screen held its invariants")
    assert.truthy(tostring(err):find("invariant 'expiresOnTime' does not hold", 1, true), tostring(err))
  end)

  it("holds once fixed, through the same steps and an exploration", function()
    steps(here .. "/fixed")
    T.explore(here .. "/fixed", { seed = 1, runs = 20, quiet = true })
  end)
end)
