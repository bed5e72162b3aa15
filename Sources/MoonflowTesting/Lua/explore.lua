-- moonflow.explore: `T.explore`, `T.faults` and the shrinker, and `T.gen` from generators.lua.
-- moonflow_test.lua runs this chunk with T, `core` (TestModule.swift), its own helpers and the
-- generators' chunk; it returns what the store's methods share (`broken`, the invariant check).
--
-- A run is data: a list of steps ({ send = action } or { advance = ms }) and a plan of service
-- faults by call number. Runs are drawn from the feature's declared `actions` with a seeded
-- generator, executed on a fresh store each, checked after every step, and a failing one is
-- shrunk by executing smaller runs until none fails the same way.
local T, core, support, generators, guidance = ...
local mf = require "moonflow"
local raise, asStream, callable = support.raise, support.asStream, support.callable
-- T.gen's generators, the seeded random source, the deep copy and keys in order (generators.lua).
local shared = generators(support)
local G, isGen, towards, copy, fromSchema, sortedKeys =
  shared.G, shared.isGen, shared.towards, shared.copy, shared.fromSchema, shared.sortedKeys
T.gen = G
-- What counts as new, and the corpus of runs that reached it (guide.lua).
local Novelty, Guide
do
  local g = guidance(shared)
  Novelty, Guide = g.Novelty, g.Guide
end

-- MARK: - Invariants

-- A value as Lua source (a spec line can hold it): sorted keys, strings quoted.
local function show(v, depth)
  depth = depth or 0
  local t = type(v)
  if t == "string" then
    if #v > 60 and v:rep(1) == v then
      local unit = v:sub(1, 5)
      if unit:rep(#v // 5) == v then return ("(%q):rep(%d)"):format(unit, #v // 5) end
    end
    return ("%q"):format(v):gsub("\\\n", "\\n")
  end
  if t == "number" then
    if v == math.maxinteger then return "math.maxinteger" end
    if v == math.mininteger then return "math.mininteger" end
    if math.type(v) == "float" then
      -- As Lua reads it back: the same float (tostring keeps 14 digits), still a float.
      if v ~= v then return "(0/0)" end
      if v == math.huge then return "math.huge" end
      if v == -math.huge then return "-math.huge" end
      local s = tostring(v)
      if tonumber(s) ~= v then s = ("%.17g"):format(v) end
      if not s:find("[%.eEn]") then s = s .. ".0" end
      return s
    end
    return tostring(v)
  end
  if t ~= "table" then return tostring(v) end
  if depth > 6 then return "{ ... }" end
  local parts, n = {}, #v
  for i = 1, n do parts[#parts + 1] = show(v[i], depth + 1) end
  for _, k in ipairs(sortedKeys(v)) do
    if not (math.type(k) == "integer" and k >= 1 and k <= n) then
      local key = (type(k) == "string" and k:match("^[%a_][%w_]*$")) and k or ("[" .. show(k) .. "]")
      if k == "type" then table.insert(parts, 1, key .. " = " .. show(v[k], depth + 1))
      else parts[#parts + 1] = key .. " = " .. show(v[k], depth + 1) end
    end
  end
  if #parts == 0 then return "{}" end
  return "{ " .. table.concat(parts, ", ") .. " }"
end



-- The first invariant of `own` (the definition's) or `extra` (the spec's) that does not hold
-- for `state`, as a message (and its key); nil when all hold. One holds unless it returns
-- false (with an optional message) or raises.
-- `names`: the list's keys in that order, when the caller sorted them once (the explorer does,
-- per exploration); else sorted here.
local function brokenIn(list, names, whose, state)
  for i = 1, #names do
    local name = names[i]
    local ok, result, why = pcall(list[name], copy(state))
    if not ok or result == false then
      local reason = not ok and (": it raised " .. tostring(result)) or (why and (": " .. tostring(why)) or "")
      return ("%sinvariant '%s' does not hold%s\n  state = %s"):format(whose, tostring(name), reason, show(state)),
        "invariant " .. tostring(name)
    end
  end
end

local function broken(own, extra, state, ownNames, extraNames)
  local msg, key = brokenIn(own, ownNames or sortedKeys(own), "", state)
  if msg then return msg, key end
  return brokenIn(extra, extraNames or sortedKeys(extra), "the spec's ", state)
end


-- MARK: - Service faults

local DELAYS = { 1, 10, 100, 250, 500, 1000, 3000 }

-- Wraps each service (a stub, or the feature's own Lua service) so that call n answers as
-- `plan[n]` says: "fail", a delay in ms, or (absent) as it would. With `draw`, a call the plan
-- does not name draws its answer and writes it into the plan; with `made`, each call is told
-- to it (`made(n)`) as it is made.
local function faulty(def, stubs, plan, draw, made)
  local count = 0
  local function wrap(name, fn)
    return function(...)
      count = count + 1
      local n = count
      if made then made(n) end
      local fault = plan[n]
      if fault == nil and draw then fault = draw(name); plan[n] = fault or false end
      if fault == "fail" then
        return mf.fail(("the service '%s' failed (call %d: a fault the explorer injected)"):format(name, n))
      end
      local s = asStream(fn(...))
      if math.type(fault) == "integer" then return mf.timer(fault):flatMap(function() return s end) end
      return s
    end
  end
  local services, names = {}, {}
  if def and type(def.services) == "table" then
    for name, fn in pairs(def.services) do
      if type(fn) == "function" then services[name] = wrap(name, fn); names[name] = true end
    end
  end
  for name, fn in pairs(stubs or {}) do
    if callable(fn) then
      services[name] = wrap(name, fn)
    elseif type(fn) == "table" then
      local methods = {}
      for k, m in pairs(fn) do methods[k] = wrap(name .. ":" .. tostring(k), m) end
      services[name] = methods
    end
    names[name] = true
  end
  return services, next(names) ~= nil
end

-- A store's definition, from a store made only to read it.
local function definitionOf(target, source)
  local h, err = core.new(target, nil, nil, false, source, true)
  if not h then raise(err, 4) end
  local def = core.definition(h)
  core.exploreStop(h)
  return def
end

-- `services = T.faults("search", { [1] = "fail", [2] = 250 }, stubs)`: the plugin's own Lua
-- services and the stubs, with call 1 failing and call 2 answering 250 ms late (the calls
-- counted over all of them, in order): what a shrunk exploration prints to reproduce it.
-- T.store given it wraps the services of its own load instead (`storeServices`), as the explorer
-- wraps each run's: services that share state with `handle` see the same state there.
local FAULTS = setmetatable({}, { __mode = "k" })

function T.faults(target, plan, stubs)
  if type(plan) ~= "table" then raise("T.faults(pluginOrFeature, plan [, stubs]): plan is a table of call number = \"fail\" or a delay in ms", 2) end
  local services = faulty(definitionOf(target), stubs, copy(plan))
  FAULTS[services] = { target = target, plan = copy(plan), stubs = stubs }
  return services
end

-- What T.store passes to core.new for `services` made by T.faults for this same plugin: the
-- plugin compiled, and a function that wraps the services of the definition it loads. Nil for
-- any other services.
local function storeServices(target, services)
  local f = FAULTS[services]
  if not f or f.target ~= target or type(target) ~= "string" then return nil end
  local chunk, file = core.compile(target)
  if not chunk then raise(file, 3) end
  return chunk, file, function(def) return (faulty(def, f.stubs, copy(f.plan))) end
end

-- MARK: - What a run reached

-- The enum fields of a declared state: { path = "status", values = {...}, at = function(state) -> values }.
local function enumFields(decl)
  local found = {}
  local function walk(d, path, get)
    if type(d) ~= "table" or isGen(d) then return end
    local head = d[1]
    if type(head) == "string" then
      local kind = head:gsub("%?$", "")
      if kind == "enum" then
        local values = {}
        for i = 2, #d do values[#values + 1] = d[i] end
        found[#found + 1] = { path = path, values = values, get = get }
      elseif kind == "list" or kind == "map" then
        walk(d.of, path .. "[]", function(s, out)
          for _, parent in ipairs(get(s, {})) do
            if type(parent) == "table" then for _, v in pairs(parent) do out[#out + 1] = v end end
          end
          return out
        end)
      elseif kind == "record" then
        for k, v in pairs(d) do if type(k) == "string" then walk(v, path .. "." .. k, function(s, out)
          for _, parent in ipairs(get(s, {})) do if type(parent) == "table" then out[#out + 1] = parent[k] end end
          return out
        end) end end
      end
      return
    end
    for k, v in pairs(d) do
      if type(k) == "string" then
        walk(v, (path == "" and "" or path .. ".") .. k, function(s, out)
          for _, parent in ipairs(get(s, {})) do if type(parent) == "table" then out[#out + 1] = parent[k] end end
          return out
        end)
      end
    end
  end
  walk(decl, "", function(s, out) out[1] = s; return out end)
  table.sort(found, function(a, b) return a.path < b.path end)
  return found
end

-- `novelty` (guide.lua's) hears what each run does, to say what it reached first.
local function Reach(def, actions, enums, novelty)
  local declared = { action = sortedKeys(actions), mutation = {}, effect = {} }
  if def then
    declared.mutation = sortedKeys(def.mutations)
    declared.effect = sortedKeys(def.outputs)
  end
  local seen = { action = {}, mutation = {}, effect = {} }
  local enumSeen = {}
  for i in ipairs(enums) do enumSeen[i] = {} end
  local reach = { declared = declared, seen = seen, enums = enums, enumSeen = enumSeen, novelty = novelty }
  function reach.state(s)
    for i, e in ipairs(enums) do
      for _, v in ipairs(e.get(s, {})) do enumSeen[i][v] = true end
    end
    novelty.state(s)
  end
  function reach.sent(t)
    seen.action[t] = true
    novelty.sent(t)
  end
  function reach.event(kind, t)
    if seen[kind] then seen[kind][t] = true end
    novelty.event(kind, t)
  end
  return reach
end

-- Lines saying what was reached and what never was.
local function reachLines(reach)
  local reached, never = {}, {}
  for _, kind in ipairs { "action", "mutation", "effect" } do
    local all, seen = reach.declared[kind], reach.seen[kind]
    local yes, no = {}, {}
    for _, name in ipairs(all) do if seen[name] then yes[#yes + 1] = name else no[#no + 1] = name end end
    for _, name in ipairs(sortedKeys(seen)) do
      local listed = false
      for _, d in ipairs(all) do if d == name then listed = true end end
      if not listed then yes[#yes + 1] = name end
    end
    if #all > 0 or #yes > 0 then
      reached[#reached + 1] = ("%ss %d/%d%s"):format(kind, #yes, math.max(#all, #yes), #yes > 0 and (" (" .. table.concat(yes, ", ") .. ")") or "")
    end
    for _, name in ipairs(no) do never[#never + 1] = kind .. " " .. name end
  end
  for i, e in ipairs(reach.enums) do
    local yes = {}
    for _, v in ipairs(e.values) do
      if reach.enumSeen[i][v] then yes[#yes + 1] = v else never[#never + 1] = ("state.%s = %q"):format(e.path, v) end
    end
    reached[#reached + 1] = ("state.%s %d/%d"):format(e.path, #yes, #e.values)
  end
  return reached, never
end

-- MARK: - Executing a run

-- Whether an error that `cause` (an action type) led to is allowed by `allow`:
-- true, or a table of action = true or text the message contains.
local function allowed(allow, cause, message)
  if allow == true then return true end
  if type(allow) ~= "table" then return false end
  local a = allow[cause or ""] or allow["*"]
  if a == true then return true end
  return type(a) == "string" and message:find(a, 1, true) ~= nil
end

local SETTLE_ROUNDS = 100
local FAR = 86400000  -- a day: a step's advance goes no further

-- Executes `run` on a fresh store; returns the failure (nil when every check held) and, with
-- `trace`, what each step led to. `run.steps[i]` is { send = action } or { advance = ms };
-- `run.plan` the faults by call number; with `run.rng` a call the plan lacks draws one.
local function execute(ctx, run, trace, reach)
  local plan = run.plan
  local drawFault, made
  -- The step being executed, and (in a guided exploration's search) which step made each call.
  local current, at = nil, 0
  if run.rng and ctx.guided then
    local calls = {}
    run.calls = calls
    made = function(n) calls[n] = at end
  end
  if run.rng and ctx.faults then
    local r, f = run.rng, ctx.faults
    drawFault = function()
      local x = r.next() >> 11
      local p = x * (1.0 / 9007199254740992.0)
      -- A call of a step whose value came from the plugin's code: its own odds (guide.lua).
      local fail, late = f.fail, f.late
      if current and ctx.guide.fromCode[current] then fail, late = ctx.guide.codeFaults(f) end
      if p < fail then return "fail" end
      if p < fail + late then return r.pick(DELAYS) end
      return false
    end
  end
  -- A plugin is compiled once and run for each store: every run, and every run of the shrinker,
  -- gets a definition of its own, its Lua services too (wrapped as that load's own).
  local stubs, target, source = ctx.stubs, ctx.target, ctx.source
  if ctx.chunk then target, source = ctx.chunk, ctx.file end
  if ctx.faults then
    if ctx.chunk then
      stubs = function(def) return (faulty(def, ctx.userStubs, plan, drawFault, made)) end
    else
      stubs = faulty(ctx.def, ctx.userStubs, plan, drawFault, made)
    end
  end
  local started = core.clock()
  local h, err = core.new(target, stubs, ctx.state, false, source, true)
  if not h then raise(err, 4) end
  core.explore(h, ctx.keepStates)
  local traced = trace and {} or nil
  local failure

  local function check(where)
    local events = core.exploreTake(h)
    if traced then traced[#traced + 1] = { at = where, events = events } end
    for _, e in ipairs(events) do
      local t = type(e.value) == "table" and e.value.type or nil
      if reach and t then reach.event(e.kind, t) end
      if e.kind == "error" and not allowed(ctx.allowErrors, e.cause, e.message) then
        return { key = "error", check = "no error", message = ("an error%s: %s%s"):format(
          e.cause and (" after action " .. e.cause) or "", e.message, e.where and (" (" .. e.where .. ")") or ""),
          text = e.message }
      end
      if e.kind == "error" then e.allowed = true end
      if e.state ~= nil then
        if reach then reach.state(e.state) end
        local msg, key = broken(ctx.invariants, ctx.extraInvariants, e.state, ctx.ownNames, ctx.extraNames)
        if msg then return { key = key, check = key, message = msg, spec = ctx.extraInvariants and ctx.extraInvariants[key:sub(11)] ~= nil } end
      end
    end
    return nil
  end

  local initial = core.state(h)
  if reach then reach.state(initial) end
  if reach and ctx.lines then reach.novelty.lines(core.exploreLinesTake()) end
  local msg, key = broken(ctx.invariants, ctx.extraInvariants, initial, ctx.ownNames, ctx.extraNames)
  if msg then failure = { key = key, check = key, message = msg .. "\n  (the first state, before any action)", step = 0 } end

  local steps = run.steps
  local i = 0
  while not failure do
    local step
    if run.rng then
      -- A run built from the corpus (guide.lua) starts with its steps given, then draws on.
      if i >= run.length or (ctx.stepBudget and ctx.stepsUsed >= ctx.stepBudget) then break end
      step = steps[i + 1]
      if not step then
        step = ctx.draw(run.rng, h, run.guided and reach and reach.novelty.lastState)
        steps[#steps + 1] = step
      end
    else
      step = steps[i + 1]
      if not step then break end
    end
    i = i + 1
    current, at = step, i
    ctx.stepsUsed = ctx.stepsUsed + 1
    if reach then reach.novelty.step = i end
    if step.send then
      if reach then reach.sent(step.send.type) end
      local ok, refusal = core.exploreSend(h, step.send)
      if not ok then
        core.exploreStop(h)
        raise(("T.explore: the feature refused a drawn action %s: %s\n  (give opts.gen generators that draw only what the feature takes)"):format(show(step.send), refusal), 4)
      end
    else
      core.advance(h, step.advance)
    end
    failure = check(i)
    if failure then failure.step = i end
    if reach and ctx.lines then reach.novelty.lines(core.exploreLinesTake()) end
  end
  -- The run is over: the clock goes past every timer, then nothing may be left in flight.
  current, at = nil, i + 1
  if not failure then
    for _ = 1, SETTLE_ROUNDS do
      core.exploreSettle(h)  -- answers of services and repositories that work off the clock
      local due = core.exploreNextDue(h)
      if due then core.advance(h, due) end
      failure = check("settle")
      if failure then failure.step = #steps + 1; failure.settling = true; break end
      if not due then break end
    end
  end
  if not failure and not ctx.allowInFlight then
    local flights = core.exploreInFlight(h)
    if #flights > 0 then
      failure = { key = "in flight", check = "nothing in flight at the end", step = #steps + 1, settling = true,
        message = "after the clock went past every timer, still in flight:\n  - " .. table.concat(flights, "\n  - ") }
    end
  end
  core.exploreStop(h)
  local took = core.clock() - started
  if took > ctx.longest then ctx.longest = took end
  return failure, traced
end

-- MARK: - Drawing a step

local function drawer(ctx)
  local names, total = {}, 0
  for _, name in ipairs(sortedKeys(ctx.actions)) do
    local w = ctx.weights[name]
    if w == nil then w = 1 end
    if type(w) ~= "number" or w < 0 then raise(("T.explore: opts.weights.%s must be a number of 0 or more (got %s)"):format(name, tostring(w)), 4) end
    if w > 0 then names[#names + 1] = { name = name, w = w }; total = total + w end
  end
  if total == 0 then raise("T.explore: every action has weight 0; nothing to send", 4) end
  local gens = {}
  for _, a in ipairs(names) do
    local fields = {}
    local decl = ctx.actions[a.name]
    if type(decl) ~= "table" then raise(("T.explore: action '%s' must be declared as a table of fields (got %s)"):format(a.name, type(decl)), 4) end
    local given = ctx.gen[a.name]
    if given ~= nil and type(given) ~= "table" then raise(("T.explore: opts.gen.%s must be a table of field = generator"):format(a.name), 4) end
    for k, v in pairs(given or {}) do
      if decl[k] == nil then raise(("T.explore: opts.gen.%s.%s names a field action '%s' does not declare"):format(a.name, k, a.name), 4) end
      fields[k] = isGen(v) and v or G.constant(v)
    end
    for k, v in pairs(decl) do
      if fields[k] == nil then fields[k] = fromSchema(v, ("action '%s' field '%s'"):format(a.name, tostring(k))) end
    end
    gens[a.name] = G.record(fields)
  end
  ctx.actionGens = gens
  -- `state`: the run's latest state, in a run built from the corpus, whose values an
  -- action's fields may take (guide.lua's `fill`).
  return function(r, h, state)
    local due = core.exploreNextDue(h)
    local p = due and 0.35 or 0.1
    if r.chance(p) then
      local ms
      if due then
        local choice = r.below(4)
        if choice == 0 or due == 0 then ms = due
        elseif choice == 1 then ms = due - 1
        elseif choice == 2 then ms = r.int(0, math.min(due, FAR) * 2)
        else ms = math.min(due, FAR) + r.int(0, 50) end
        ms = math.min(ms, FAR)
      else
        ms = r.pick { 1, 10, 100, 1000 }
      end
      return { advance = ms }
    end
    local x, pick = r.next() >> 11, names[#names]
    local at = x * (1.0 / 9007199254740992.0) * total
    for _, a in ipairs(names) do
      if at < a.w then pick = a; break end
      at = at - a.w
    end
    local action = gens[pick.name].draw(r)
    action.type = pick.name
    local step = { send = action }
    -- A field given a number of the plugin's code marks the step (guide.lua's `fromCode`): its
    -- calls draw their faults at the guide's odds, and mutations plant faults there.
    if state ~= nil and ctx.guide.fill(r, action, state) then ctx.guide.fromCode[step] = true end
    return step
  end
end

-- MARK: - Budgets

-- Why the exploration must stop now, or nil: its budget of steps or seconds is spent, or the
-- test's deadline is near (what is left would not cover the run to print and a margin).
-- Checked before each run, of the search and of the shrinker; the reason is kept.
local function budgetCheck(ctx)
  local reason
  return function()
    if reason then return reason end
    if ctx.stepBudget and ctx.stepsUsed >= ctx.stepBudget then
      reason, ctx.stopKind = ("its budget of %d steps"):format(ctx.stepBudget), "steps"
    elseif ctx.deadline and core.clock() >= ctx.deadline then
      reason, ctx.stopKind = ("its budget of %s s"):format(tostring(ctx.seconds)), "seconds"
    else
      local left = core.testTimeLeft()
      -- Three times the longest run so far, and a tenth of a second, for the run that prints.
      if left and left < 100 + 3000 * ctx.longest then
        reason, ctx.stopKind = "the test's time limit (give --time-limit more, or the exploration a budget of its own)", "test"
      end
    end
    return reason
  end
end

-- MARK: - Shrinking

local function fails(ctx, run, key)
  ctx.executions = ctx.executions + 1
  local f = execute(ctx, { steps = run.steps, plan = copy(run.plan) })
  return f and f.key == key and f or nil
end

local function withSteps(run, steps) return { steps = steps, plan = run.plan } end

local function shrink(ctx, run, failure)
  local key = failure.key
  local budget = ctx.shrinkBudget
  -- The shrinker's own limit on runs, and the exploration's budget (`stopped`, which also
  -- says why): what is left when either ends is the best shrink so far.
  local function more()
    if ctx.executions >= budget then return false end
    if ctx.stopped() then ctx.shrinkCut = true; return false end
    return true
  end
  local best = run
  -- Nothing after the failing step matters.
  if failure.step and failure.step <= #run.steps then
    local cut = {}
    for i = 1, failure.step do cut[i] = run.steps[i] end
    local f = fails(ctx, withSteps(run, cut), key)
    if f then best, failure = withSteps(run, cut), f end
  end
  local progress = true
  while progress and more() do
    progress = false
    -- Fewer steps: chunks of halving size, then one at a time.
    local size = math.max(1, #best.steps // 2)
    while size >= 1 and more() do
      local i = 1
      while i <= #best.steps and more() do
        local steps = {}
        for j, s in ipairs(best.steps) do if j < i or j >= i + size then steps[#steps + 1] = s end end
        local f = #steps < #best.steps and fails(ctx, withSteps(best, steps), key)
        if f then best, failure, progress = withSteps(best, steps), f, true else i = i + size end
      end
      size = size // 2
    end
    -- Adjacent advances as one.
    for i = #best.steps - 1, 1, -1 do
      local a, b = best.steps[i], best.steps[i + 1]
      if a and b and a.advance and b.advance and more() then
        local steps = copy(best.steps)
        steps[i] = { advance = a.advance + b.advance }
        table.remove(steps, i + 1)
        local f = fails(ctx, withSteps(best, steps), key)
        if f then best, failure, progress = withSteps(best, steps), f, true end
      end
    end
    -- Simpler values and shorter waits, a step at a time.
    for i = 1, #best.steps do
      local improved = true
      while improved and more() do
        improved = false
        local s = best.steps[i]
        local options = {}
        if s.advance then
          for _, c in ipairs(towards(s.advance, 0)) do options[#options + 1] = { advance = c } end
        else
          local g = ctx.actionGens[s.send.type]
          local fields = copy(s.send)
          fields.type = nil
          for _, c in ipairs(g and g.shrink(fields) or {}) do
            c.type = s.send.type
            options[#options + 1] = { send = c }
          end
        end
        for _, o in ipairs(options) do
          if not more() then break end
          local steps = copy(best.steps)
          steps[i] = o
          local f = fails(ctx, withSteps(best, steps), key)
          if f then best, failure, improved, progress = withSteps(best, steps), f, true, true; break end
        end
      end
    end
    -- Fewer faults, earlier calls (so the steps before can go), then shorter delays.
    for _, n in ipairs(sortedKeys(best.plan)) do
      local fault = best.plan[n]
      if fault and more() then
        local plan = copy(best.plan)
        plan[n] = false
        local f = fails(ctx, { steps = best.steps, plan = plan }, key)
        local moved
        if not f then
          for _, m in ipairs(towards(n, 1)) do
            if not best.plan[m] and more() then
              local earlier = copy(best.plan)
              earlier[n], earlier[m] = nil, fault
              f = fails(ctx, { steps = best.steps, plan = earlier }, key)
              if f then moved = earlier; break end
            end
          end
        end
        if moved then best, failure, progress = { steps = best.steps, plan = moved }, f, true
        elseif f then best, failure, progress = { steps = best.steps, plan = plan }, f, true
        elseif math.type(fault) == "integer" then
          for _, d in ipairs(towards(fault, 1)) do
            plan[n] = d
            f = fails(ctx, { steps = best.steps, plan = copy(plan) }, key)
            if f then best, failure, progress = { steps = best.steps, plan = copy(plan) }, f, true; break end
          end
        end
      end
    end
  end
  return best, failure
end

-- MARK: - The shrunk run as a spec

local function firstLine(s) return (tostring(s):match("^[^\n]*")) end

-- The run's sends as `moonflow run` input lines, each at its time on the virtual clock.
local function inputLines(run)
  local out, t = {}, 0
  for _, s in ipairs(run.steps) do
    if s.advance then t = t + s.advance
    else out[#out + 1] = ('{"at":%d,"send":%s}'):format(t, core.json(s.send)) end
  end
  return table.concat(out, "\n")
end

local function specText(ctx, run, failure, traced)
  local out = {}
  local function line(s) out[#out + 1] = s end
  local target = type(ctx.target) == "string" and ("%q"):format(ctx.target) or "feature"
  local opts = { "exhaustive = false" }
  local faults = {}
  for _, n in ipairs(sortedKeys(run.plan)) do
    local f = run.plan[n]
    if f then faults[#faults + 1] = ("[%d] = %s"):format(n, f == "fail" and '"fail"' or tostring(f)) end
  end
  if #faults > 0 then
    opts[#opts + 1] = ("services = T.faults(%s, { %s }%s)"):format(target, table.concat(faults, ", "), ctx.userStubs and ", services" or "")
  elseif ctx.userStubs then
    opts[#opts + 1] = "services = services"
  end
  if ctx.state then opts[#opts + 1] = "state = " .. show(ctx.state) end
  line(("it(%q, function()"):format(("%s: %s"):format(ctx.name, failure.check)))
  if ctx.userStubs then line("  -- services: the stubs the exploration was given") end
  line(("  local store = T.store(%s, { %s })"):format(target, table.concat(opts, ", ")))
  local byStep = {}
  for _, t in ipairs(traced or {}) do byStep[t.at] = t.events end
  local function after(events)
    for _, e in ipairs(events or {}) do
      if e.kind == "error" and e.allowed then line(("  store:receiveError(%q)"):format(firstLine(e.message):sub(1, 60))) end
    end
  end
  for i, s in ipairs(run.steps) do
    if s.send then
      line(("  store:send(%s)"):format(show(s.send)))
    else
      line(("  store:advance(%d)"):format(s.advance))
      for _, e in ipairs(byStep[i] or {}) do
        -- By type: the store is not exhaustive, and the payload is not what the run is about.
        if e.kind == "mutation" then
          local name = type(e.value) == "table" and e.value.type
          line(("  store:receive(%s)"):format(show(type(name) == "string" and name or e.value)))
        end
      end
    end
    if i ~= failure.step then after(byStep[i]) end
  end
  local reason = firstLine(failure.message)
  if failure.settling then line(("  store:advance(%d)  -- past every timer"):format(FAR)) end
  if failure.key == "error" then
    line(("  store:finish()  -- fails: %s"):format(reason))
  elseif failure.key == "in flight" then
    line(("  assert.same({}, store.inFlight)  -- fails: %s"):format(reason))
  elseif failure.spec then
    line(("  store:checkInvariants(invariants)  -- fails: %s (invariants: the spec's)"):format(reason))
  else
    line(("  store:checkInvariants()  -- fails: %s"):format(reason))
  end
  line("end)")
  return table.concat(out, "\n")
end

-- MARK: - T.explore

local OPTIONS = {
  runs = true, length = true, seed = true, weights = true, gen = true, services = true, state = true,
  invariants = true, allowErrors = true, allowInFlight = true, actions = true, faults = true,
  raise = true, shrink = true, quiet = true, skipUndeclared = true, firstRun = true, steps = true, seconds = true,
  guided = true,
}

-- The file a feature given as a table was written in (its `handle`'s), when it is one.
local function sourceFile(def)
  local handle = type(def) == "table" and rawget(def, "handle")
  local info = type(handle) == "function" and debug and debug.getinfo and debug.getinfo(handle, "S")
  return info and info.source:match("^@(.+)$") or nil
end

local function describeTarget(target)
  if type(target) == "string" then return target end
  return type(target) == "table" and tostring(rawget(target, "name") or "feature") or "?"
end

function T.explore(target, opts)
  if type(target) ~= "string" and type(target) ~= "table" then
    raise(("T.explore(pluginOrFeature [, opts]): give a plugin name or an mf.feature{...} table (got %s)"):format(type(target)), 2)
  end
  if opts ~= nil and type(opts) ~= "table" then raise(("T.explore: opts must be a table (got %s)"):format(type(opts)), 2) end
  opts = opts or {}
  for k in pairs(opts) do
    if not OPTIONS[k] then
      raise(("T.explore: unknown option '%s'; the options are %s"):format(tostring(k), table.concat(sortedKeys(OPTIONS), ", ")), 2)
    end
  end
  local defaults = core.exploreDefaults()
  local started = os.clock()
  local source
  if type(target) == "table" and debug and debug.getinfo then
    local info = debug.getinfo(2, "Sl")
    if info then source = info.short_src .. ":" .. tostring(info.currentline) end
  end
  local def = definitionOf(target, source)
  if def == nil then raise("T.explore: no definition behind " .. describeTarget(target), 2) end
  local actions = opts.actions or def.actions
  if type(actions) ~= "table" or next(actions) == nil then
    if opts.skipUndeclared then
      print(("explore %s: skipped: it declares no actions (an mf.compose without `actions` routes what it is sent); explore it from a spec with T.explore(%q, { actions = ... })"):format(describeTarget(target), describeTarget(target)))
      return nil
    end
    raise(("T.explore: %s declares no actions to draw from (an mf.compose without `actions` routes what it is sent): give them as opts.actions = { name = { field = \"type\" } }"):format(describeTarget(target)), 2)
  end
  if opts.invariants ~= nil and type(opts.invariants) ~= "table" then raise("T.explore: opts.invariants must be a table of name = function(state)", 2) end
  local faults = opts.faults
  if faults == nil or faults == true then faults = { fail = 0.1, late = 0.2 } end
  if faults then
    if type(faults) ~= "table" then raise("T.explore: opts.faults is false, or { fail = p, late = p }", 2) end
    faults = { fail = faults.fail or 0, late = faults.late or 0 }
  end
  local userStubs = opts.services
  if userStubs ~= nil and type(userStubs) ~= "table" then raise("T.explore: opts.services must be a table of stubs by service name", 2) end
  local ctx = {
    name = describeTarget(target), target = target, source = source, def = def, actions = actions,
    weights = opts.weights or {}, gen = opts.gen or {}, state = opts.state, userStubs = userStubs,
    invariants = type(def.invariants) == "table" and def.invariants or nil, extraInvariants = opts.invariants,
    allowErrors = opts.allowErrors, allowInFlight = opts.allowInFlight, executions = 0,
    shrinkBudget = opts.shrink == false and 0 or 2000, stepsUsed = 0, longest = 0,
  }
  if type(target) == "string" then
    local chunk, file = core.compile(target)
    if not chunk then raise(file, 2) end
    ctx.chunk, ctx.file = chunk, file
  end
  local _, wrapsAny = faulty(def, userStubs, {})
  ctx.faults = wrapsAny and faults or nil
  if not ctx.faults and userStubs then
    ctx.stubs = {}
    for name, fn in pairs(userStubs) do ctx.stubs[name] = support.stub(name, fn) end
  end
  ctx.ownNames, ctx.extraNames = sortedKeys(ctx.invariants), sortedKeys(ctx.extraInvariants)
  local enums = type(def.state) == "table" and enumFields(def.state) or {}
  ctx.keepStates = ctx.invariants ~= nil or ctx.extraInvariants ~= nil or #enums > 0 or type(def.state) == "table"
  ctx.draw = drawer(ctx)
  local reach = Reach(def, actions, enums, Novelty(def.state, enums))
  local runs = defaults.runs or opts.runs or 100
  local length = defaults.length or opts.length or 50
  local seed = defaults.seed or opts.seed or core.freshSeed()
  local stepBudget, seconds = defaults.steps or opts.steps, defaults.seconds or opts.seconds
  if stepBudget ~= nil and (math.type(stepBudget) ~= "integer" or stepBudget < 1) then
    raise(("T.explore: opts.steps, the budget of steps over all runs, must be a whole number of 1 or more (got %s)"):format(tostring(stepBudget)), 2)
  end
  if seconds ~= nil and (type(seconds) ~= "number" or seconds ~= seconds or seconds <= 0) then
    raise(("T.explore: opts.seconds, the budget of time, must be a number of seconds above 0 (got %s)"):format(tostring(seconds)), 2)
  end
  ctx.stepBudget, ctx.seconds = stepBudget, seconds
  if seconds then ctx.deadline = core.clock() + seconds end
  ctx.stopped = budgetCheck(ctx)
  if math.type(runs) ~= "integer" or runs < 1 or math.type(length) ~= "integer" or length < 1 then
    raise("T.explore: opts.runs and opts.length must be whole numbers of 1 or more", 2)
  end
  if math.type(seed) ~= "integer" then raise(("T.explore: opts.seed must be a whole number (got %s)"):format(tostring(seed)), 2) end
  -- Guided (the default): runs that reach something new are kept and built on; false draws
  -- every run uniformly.
  local guided = opts.guided
  if guided == nil then guided = true end
  if type(guided) ~= "boolean" then
    raise(("T.explore: opts.guided must be a boolean, true (runs that reach something new are built on) or false (every run drawn uniformly) (got %s)"):format(type(guided)), 2)
  end
  -- `moonflow test --no-guided` (defaults.guided = false) overrides the spec's option.
  if defaults.guided ~= nil then guided = defaults.guided end
  ctx.guided = guided
  -- Guided, the lines of the plugin's files each step ran for the first time count as new
  -- (a line hook in C that counts each line once per exploration).
  ctx.lines = guided and core.exploreLinesStart() or nil
  ctx.guide = Guide {
    seed = seed, first = opts.firstRun or 1, length = length, guided = guided, stateDecl = def.state,
    actions = actions, given = ctx.gen, actionGens = ctx.actionGens, faults = ctx.faults, delays = DELAYS,
    source = ctx.file or sourceFile(def),
  }
  local first = opts.firstRun or 1
  if math.type(first) ~= "integer" or first < 1 then raise("T.explore: opts.firstRun must be a whole number of 1 or more", 2) end
  -- The last run's number, first + runs - 1, must not wrap (a loop to a wrapped bound runs nothing).
  if first - 1 > math.maxinteger - runs then
    raise(("T.explore: opts.firstRun (%d) + opts.runs (%d) - 1 is past math.maxinteger (%d): give a firstRun of at most %d, or fewer runs"):format(
      first, runs, math.maxinteger, math.maxinteger - runs + 1), 2)
  end
  local failure, found, foundRun
  local ran = 0
  local stoppedSearch
  for n = first, first + runs - 1 do
    stoppedSearch = ctx.stopped()
    if stoppedSearch then break end
    -- Wraps for large seeds, as a hash may: the same seed and run always draw the same run.
    local run = ctx.guide.run(n)
    ran = ran + 1
    reach.novelty.begin()
    local f = execute(ctx, run, false, reach)
    if f then failure, found, foundRun = f, { steps = run.steps, plan = run.plan }, n; break end
    ctx.guide.ran(run, reach.novelty)
  end
  local reached, never = reachLines(reach)
  local took = os.clock() - started
  local report = {
    name = ctx.name, seed = seed, runs = ran, length = length, guided = ctx.guided,
    newRuns = ctx.guide.newRuns, corpus = #ctx.guide.corpus, lines = ctx.lines and reach.novelty.linesReached or nil,
    reached = reached, never = never, seconds = took, steps = ctx.stepsUsed, stopped = stoppedSearch and ctx.stopKind,
  }
  local head = ("explore %s: seed %d, %d runs × %d steps"):format(ctx.name, seed, runs, length)
  if not failure then
    -- Cut short by the test's limit, it says so even when quiet: fewer runs ran than asked.
    if stoppedSearch and (not opts.quiet or ctx.stopKind == "test") then
      print(("%s: every check held in the %d runs (%d steps) that ran before %s stopped it (%.2f s)"):format(
        head, ran, ctx.stepsUsed, stoppedSearch, took))
    elseif not opts.quiet then
      print(("%s: every check held (%.2f s)"):format(head, took))
      print(("  %d runs reached something new, corpus of %d%s"):format(
        ctx.guide.newRuns, #ctx.guide.corpus, ctx.guided and "" or " (guided = false: every run uniform)"))
      print("  reached: " .. table.concat(reached, "; "))
      if #never > 0 then print("  never reached: " .. table.concat(never, ", ")) end
    end
    return report
  end
  local original = #found.steps
  local best, shrunkFailure = found, failure
  if ctx.shrinkBudget > 0 then best, shrunkFailure = shrink(ctx, found, failure) end
  local final, traced = execute(ctx, { steps = best.steps, plan = copy(best.plan) }, true)
  final = final or shrunkFailure
  local spec = specText(ctx, best, final, traced)
  -- A shrink the budget or the test's limit cut short is printed as it stands: the best so far.
  local cut = ctx.shrinkCut and ctx.stopped()
  report.failure = {
    check = final.check, message = final.message, steps = best.steps, plan = best.plan,
    run = foundRun, shrunkFrom = original, spec = spec, shrinkStopped = cut and ctx.stopKind,
  }
  local shrinkRuns = ("%d runs of the shrinker"):format(ctx.executions)
  if cut then shrinkRuns = ("%s, stopped by %s: the best shrink so far"):format(shrinkRuns, cut) end
  local text = ("%s: run %d failed: %s\n  %s\nshrunk from %d steps to %d (%s); to reproduce, paste:\n%s\nor run again with --seed %d"):format(
    head, foundRun, final.check, final.message:gsub("\n", "\n  "), original, #best.steps, shrinkRuns, spec, seed)
  -- Without service faults the run is plain input: `moonflow run --record` keeps it as a
  -- recording that `moonflow replay` re-runs.
  local faulted = false
  for _, f in pairs(best.plan) do faulted = faulted or f ~= false end
  if not faulted and type(target) == "string" then
    report.failure.inputs = inputLines(best)
    text = text .. ("\nas a recording: put these lines in run.in.jsonl, then `moonflow run %s --clock virtual --record run.jsonl < run.in.jsonl` and `moonflow replay run.jsonl`:\n%s"):format(
      target, report.failure.inputs)
  end
  report.failure.text = text
  if opts.raise == false then return report end
  raise(text, 2)
end

return { broken = broken, storeServices = storeServices }
