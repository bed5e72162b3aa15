-- search's bug by hand: the steps that break `resultsMatchQuery` on the buggy screen hold on the fix.
local T = require "moonflow.test"
local here = debug.getinfo(1, "S").source:match("^@(.+)/spec/[^/]+$")

local function steps(screen)
  local store = T.store(screen, { exhaustive = false })
  store:send({ type = "query", text = "a" })
  store:advance(100)
  store:send({ type = "query", text = "b" })
  store:advance(250)  -- "a" is searched; "b" waits 50 ms more
  store:checkInvariants()
  store:advance(400)
  store:checkInvariants()
end

describe("search", function()
  it("breaks resultsMatchQuery: the results for a stale query land", function()
    local ok, err = pcall(steps, here)
    assert.is_false(ok, "the buggy screen held its invariants")
    assert.truthy(tostring(err):find("invariant 'resultsMatchQuery' does not hold", 1, true), tostring(err))
  end)

  it("holds once fixed, through the same steps and an exploration", function()
    steps(here .. "/fixed")
    T.explore(here .. "/fixed", { seed = 1, runs = 20, quiet = true })
  end)
end)
