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
-- runs x 50 steps, several times:
--   explore-bench <TAB> throughput <TAB> plugin mode repetition steps seconds failed
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

-- Whether T.explore takes `guided` (the option is new with issue 62's guided runs): without it
-- every exploration is random, and the guided column is left empty.
local guidedKnown = true
do
  local ok, err = pcall(T.explore, here .. "/pager/fixed", { guided = false, runs = 1, length = 1, quiet = true, raise = false })
  if not ok then
    if tostring(err):find("unknown option 'guided'", 1, true) then guidedKnown = false else error(err, 0) end
  end
end
local modes = { "random", "guided" }
local function options(mode, opts)
  if guidedKnown then opts.guided = mode == "guided" end
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
  emit("mode", "guided", guidedKnown and "available" or "unavailable")
  local runs = math.max(1, 100 // scale)
  emit("budget", runs, 50, seeds)
  for _, screen in ipairs(corpus) do
    if next(only) == nil or only[screen.name] then
      for _, mode in ipairs(modes) do
        if mode == "random" or guidedKnown then
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
  end
elseif kind == "throughput" then
  local runs = math.max(1, 1000 // scale)
  emit("budget", runs, 50, repeats)
  for _, plugin in ipairs { "checkout", "counter" } do
    for _, mode in ipairs(modes) do
      if mode == "random" or guidedKnown then
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
  end
else
  error("MOONFLOW_EXPLORE_BENCH is corpus or throughput (got " .. kind .. ")")
end
