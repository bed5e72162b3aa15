-- (a) of the feature suite (docs/contributing.md, Benchmarks): the counter
-- feature's own handle and reduce driven by a plain Lua loop under lua5.4 — the
-- floor any host can only approach.
-- Per action: handle returns a mutation table, reduce changes state.count in
-- place, and an "observer" reads count. The action table is reused.
-- Usage: lua5.4 bench/counter_loop.lua [ACTIONS] [RUNS]
-- Prints: counter_loop_ns <median ns per action> runs=<RUNS>
local dir = arg[0]:match("^(.*)/[^/]*$") or "."
local root = dir .. "/.."
local now = dofile(dir .. "/clock.lua")
local def = dofile(dir .. "/counter_def.lua")(root .. "/plugins/counter/init.lua")

local n = tonumber(arg[1]) or 1000000
local runs = tonumber(arg[2]) or 7
local handle, reduce = def.handle, def.reduce

local function once()
  local state = { count = 0 }
  local action = { type = "increment" }
  local seen = 0
  local t0 = now()
  for _ = 1, n do
    local m = handle(action, state)
    state = reduce(state, m)
    seen = state.count
  end
  local t1 = now()
  assert(seen == n, "counter did not reach " .. n)
  return (t1 - t0) * 1e9 / n
end

local samples = {}
for r = 1, runs do samples[r] = once() end
table.sort(samples)
print(("counter_loop_ns %.1f runs=%d"):format(samples[(runs + 1) // 2], runs))
