-- colors explored: random `more`, `refresh` and `page` (T.explore), its invariants checked after
-- every step. It carries a known race, kept as the example of what the explorer finds:
--
--   `more` asks for the next page and sets `loading`, which keeps a second `more` out. But any
--   answer clears `loading`, and `refresh` and `page` run beside `more`: when one of them
--   answers (a `page` of a page that does not exist fails at once) while the first page is
--   still on its way, the next `more` asks for that same page again, and both answers are
--   appended (red, orange, yellow twice).
--
-- The fix would be a request id in the state, or the three requests sharing one `latest` stream.
local T = require "moonflow.test"

describe("colors explored", function()
  it("finds the race of `more` with a failing `page`, and shrinks it to its three actions", function()
    local report = T.explore("colors", { seed = 1, raise = false, quiet = true })
    assert.is_table(report.failure, "the explorer found no failure")
    assert.equal("invariant noColorTwice", report.failure.check)
    assert.is_true(#report.failure.steps <= 4, report.failure.text)
    local types = {}
    for _, step in ipairs(report.failure.steps) do
      if step.send then types[#types + 1] = step.send.type end
    end
    assert.same({ "more", "page", "more" }, types)
  end)

  for part = 0, 3 do
    it(("holds its invariants with one request at a time in runs %d to %d"):format(part * 50 + 1, part * 50 + 50), function()
      T.explore("colors", { seed = 1, runs = 50, firstRun = part * 50 + 1, quiet = true, weights = { page = 0, refresh = 0 } })
    end)
  end
end)
