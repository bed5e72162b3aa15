-- upload's bug by hand: the steps that break `barOnlyWhileUploading` on the buggy screen hold on the fix.
local T = require "moonflow.test"
local here = debug.getinfo(1, "S").source:match("^@(.+)/spec/[^/]+$")

local function steps(screen)
  local store = T.store(screen, { exhaustive = false })
  store:send({ type = "start" })
  store:advance(200)
  store:send({ type = "cancel" })
  store:advance(200)
  store:checkInvariants()
end

describe("upload", function()
  it("breaks barOnlyWhileUploading: a chunk lands after cancel", function()
    local ok, err = pcall(steps, here)
    assert.is_false(ok, "the buggy screen held its invariants")
    assert.truthy(tostring(err):find("invariant 'barOnlyWhileUploading' does not hold", 1, true), tostring(err))
  end)

  it("holds once fixed, through the same steps and an exploration", function()
    steps(here .. "/fixed")
    T.explore(here .. "/fixed", { seed = 1, runs = 20, quiet = true })
  end)
end)
