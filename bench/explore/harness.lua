-- The explorer benchmark's runner: `scripts/bench explore` runs it through the release
-- `moonflow test` (moonflow-bench's ExploreBench.swift reads what it prints and makes the
-- table). Not a spec of its own (its name does not end in _spec): it only measures.
--
-- MOONFLOW_EXPLORE_BENCH=corpus (the default): each screen of corpus.lua and its fixed/
-- variant explored at the default budget (100 runs x 50 steps) for each seed, randomly
-- (`guided = false`) and guided (the default), one line per exploration:
--   explore-bench <TAB> result <TAB> screen grade variant mode seed outcome seconds runs shrunk check
-- outcome: `found` (the seeded check failed), `other` (another check failed), `none`.
-- MOONFLOW_EXPLORE_BENCH=throughput: plugins/checkout and plugins/counter explored for 1,000
-- runs x 50 steps, several times, and the same plugins sent a fixed mix of their actions
-- through a store (T.store, not exhaustive: the host the explorer drives) without the explorer:
--   explore-bench <TAB> throughput <TAB> plugin mode repetition steps seconds failed
--   explore-bench <TAB> send <TAB> plugin repetition actions seconds
-- MOONFLOW_BENCH_SCALE=N divides the runs; MOONFLOW_EXPLORE_SEEDS (10) and
-- MOONFLOW_EXPLORE_REPEAT (5) set the seeds and repetitions; MOONFLOW_EXPLORE_ONLY=a,b
-- explores those screens alone.
local T = require "moonflow.test"

local here = debug.getinfo(1, "S").source:match("^@(.+)/[^/]+$")
local root = here:match("^(.*)/bench/explore$") or "."
local corpus = dofile(here .. "/corpus.lua")

local function number(name, default)
  local v = tonumber(os.getenv(name) or "")
  return v and math.max(1, math.floor(v)) or default
end
local scale = number("MOONFLOW_BENCH_SCALE", 1)
local seeds = number("MOONFLOW_EXPLORE_SEEDS", 10)
local repeats = number("MOONFLOW_EXPLORE_REPEAT", 5)
local only = {}
for name in (os.getenv("MOONFLOW_EXPLORE_ONLY") or ""):gmatch("[^,%s]+") do only[name] = true end

local function emit(...)
  local parts = { "explore-bench" }
  for _, v in ipairs { ... } do parts[#parts + 1] = tostring(v) end
  print(table.concat(parts, "\t"))
end

local modes = { "random", "guided" }
local function options(mode, opts)
  opts.guided = mode == "guided"
  return opts
end

-- One exploration; its outcome for `check`, the seconds to find (the search, not the
-- shrinking), the runs it took and the shrunk length.
local function explore(target, mode, seed, runs, check)
  local started = os.clock()
  local report = T.explore(target, options(mode, { seed = seed, runs = runs, length = 50, quiet = true, raise = false }))
  local seconds = report.seconds or (os.clock() - started)
  local f = report.failure
  if not f then return "none", seconds, report.runs, 0, "-" end
  return f.check == check and "found" or "other", seconds, f.run or report.runs, #f.steps, f.check
end

local kind = os.getenv("MOONFLOW_EXPLORE_BENCH") or "corpus"

if kind == "corpus" then
  emit("mode", "guided", "available")
  local runs = math.max(1, 100 // scale)
  emit("budget", runs, 50, seeds)
  for _, screen in ipairs(corpus) do
    if next(only) == nil or only[screen.name] then
      for _, mode in ipairs(modes) do
        for _, variant in ipairs { "bug", "fixed" } do
          local target = here .. "/" .. screen.name .. (variant == "fixed" and "/fixed" or "")
          for seed = 1, seeds do
            it(("%s %s %s seed %d"):format(screen.name, variant, mode, seed), function()
              local outcome, seconds, ran, shrunk, check = explore(target, mode, seed, runs, screen.check)
              emit("result", screen.name, screen.grade, variant, mode, seed, outcome,
                ("%.6f"):format(seconds), ran, shrunk, check)
            end)
          end
        end
      end
    end
  end
elseif kind == "throughput" then
  local runs = math.max(1, 1000 // scale)
  emit("budget", runs, 50, repeats)
  -- The same plugins without the explorer: actions drawn as the explorer draws them (a
  -- declared action, its fields from T.gen's generators for their types), the clock moved by
  -- 1 ms to 1 s at a fifth of the steps, sent through a store. Drawn before the clock starts.
  local G = T.gen
  local draws = {
    checkout = {
      load = {}, dismiss = {}, drop = { sku = G.string() }, promo = { code = G.string() }, pay = { card = G.string() },
      add = { sku = G.string(), qty = G.optional(G.integer()) },
    },
    counter = { increment = { by = G.optional(G.integer()) }, decrement = {}, reset = {}, incrementLater = { ms = G.integer() } },
  }
  -- splitmix64, as the explorer's own source: the same mix on every machine.
  local function source(seed)
    local r, x = {}, seed
    function r.next()
      x = x + 0x9E3779B97F4A7C15
      local z = x
      z = (z ~ (z >> 30)) * 0xBF58476D1CE4E5B9
      z = (z ~ (z >> 27)) * 0x94D049BB133111EB
      return z ~ (z >> 31)
    end
    function r.below(n) return (r.next() >> 1) % n end
    function r.int(lo, hi)
      local span = hi - lo
      if span < 0 then return r.next() end
      if span == math.maxinteger then return lo + (r.next() >> 1) end
      return lo + r.below(span + 1)
    end
    function r.chance(p) return (r.next() >> 11) * (1.0 / 9007199254740992.0) < p end
    function r.pick(list) return list[r.below(#list) + 1] end
    return r
  end
  local function mix(plugin, seed, actions)
    local r, names, out, sent = source(seed), {}, {}, 0
    for name in pairs(draws[plugin]) do names[#names + 1] = name end
    table.sort(names)
    while sent < actions do
      if r.chance(0.2) then
        out[#out + 1] = r.pick { 1, 10, 100, 1000 }
      else
        local name = r.pick(names)
        local action = G.record(draws[plugin][name]).draw(r)
        action.type = name
        out[#out + 1] = action
        sent = sent + 1
      end
    end
    return out
  end
  local actions = math.max(1, 20000 // scale)
  for _, plugin in ipairs { "checkout", "counter" } do
    for rep = 1, repeats do
      it(("%s send %d"):format(plugin, rep), function()
        local steps = mix(plugin, rep, actions)
        local store = T.store(root .. "/plugins/" .. plugin, { exhaustive = false })
        local started = os.clock()
        for _, step in ipairs(steps) do
          if type(step) == "number" then store:advance(step) else store:send(step) end
        end
        emit("send", plugin, rep, actions, ("%.6f"):format(os.clock() - started))
      end)
    end
  end
  for _, plugin in ipairs { "checkout", "counter" } do
    for _, mode in ipairs(modes) do
      for rep = 1, repeats do
        it(("%s %s %d"):format(plugin, mode, rep), function()
          local started = os.clock()
          local report = T.explore(root .. "/plugins/" .. plugin, options(mode, { seed = rep, runs = runs, length = 50, quiet = true, raise = false }))
          emit("throughput", plugin, mode, rep, report.steps, ("%.6f"):format(os.clock() - started),
            report.failure and report.failure.check or "-")
        end)
      end
    end
  end
else
  error("MOONFLOW_EXPLORE_BENCH is corpus or throughput (got " .. kind .. ")")
end
