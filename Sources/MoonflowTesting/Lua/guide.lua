-- moonflow.guide: guided exploration, the corpus of runs that reached something new and the
-- mutations that build new runs from it. explore.lua runs this chunk (TestModule.swift loads
-- it and hands it over with explore.lua) with what generators.lua returns, and takes the
-- two functions it returns: `Novelty`, what counts as new, and `Guide`, what run comes next.
--
-- As coverage-guided fuzzers do for programs, for app features: a run that reached something
-- no run before it did (a line of the plugin's own Lua, a value of a declared enum, an
-- action/mutation pair, a shape of the state, an action, mutation or output type) is kept; later runs are mostly kept runs changed
-- a little (cut and drawn on, spliced, a stretch repeated, a value moved toward a boundary, a
-- fault moved or planted, a number of the code given together with a fault at its call),
-- each change weighted by how often it reached something new, with uniform runs mixed in.
-- Every choice is drawn from the run's number and the seed, and nothing depends on the order
-- of `pairs`: the same seed gives the same runs.
local shared = ...
local Random, isGen, copy, sortedKeys = shared.Random, shared.isGen, shared.copy, shared.sortedKeys

-- Runs numbered below this (from the first) are uniform: the corpus starts from them.
local WARMUP = 10
-- Of the runs after those, this share is uniform; the rest are built from the corpus.
local UNIFORM = 0.25
-- Of the runs built from the corpus, this share takes the newest kept run (the frontier);
-- the rest take any kept run.
local NEWEST = 0.7
-- A value drawn for an action field that matches values in the state is one of them this often.
local FROM_STATE = 0.5
-- Otherwise a whole-number field takes a number written in the plugin's code this often.
local FROM_CODE = 0.3
-- A call made by a step whose value came from the plugin's code fails this often (when the
-- exploration's faults fail calls at all): a boundary value is worth trying on the path
-- that handles a failure too, where the code may compare with it differently.
local CODE_FAIL = 0.4
-- A mutation's weight never falls below this share of its own (see `weight`).
local SCHEDULE_FLOOR = 0.2

-- MARK: - What counts as new

-- A number's bucket: itself from -2 to 16, else its sign and power of two (so 7 and 8 differ,
-- 1000 and 1010 do not).
local function numberBucket(v)
  if v ~= v then return 100 end
  if v >= -2 and v <= 16 then return math.tointeger(v) or (v < 0 and 40 or 41) end
  local b, m = 20, math.abs(v)
  while m >= 32 and b < 39 do m, b = m / 2, b + 1 end
  return v < 0 and -b or b
end

local function lengthBucket(n)
  if n <= 1 then return n end
  if n < 8 then return 2 end
  return 3
end

-- The probes of a declared state's shape: one per field outside lists and maps (records
-- nested in records included), each turning the field's value into a small code.
local function shapeProbes(decl)
  local probes = {}
  local function add(path, get, code, combo)
    probes[#probes + 1] = { path = path, get = get, code = code, combo = combo }
  end
  local function field(d, path, get)
    local optional, base = false, "record"
    if type(d) == "string" then
      optional, base = d:sub(-1) == "?", d:gsub("%?$", "")
    elseif type(d) == "table" and not isGen(d) and type(d[1]) == "string" then
      optional, base = d[1]:sub(-1) == "?", d[1]:gsub("%?$", "")
    elseif type(d) ~= "table" or isGen(d) then
      return
    end
    if optional then add(path .. "?", get, function(v) return v == nil and 0 or 1 end, true) end
    if base == "integer" or base == "number" then
      add(path, get, function(v) return type(v) == "number" and numberBucket(v) or -100 end)
    elseif base == "boolean" then
      add(path, get, function(v) return v == true and 1 or 0 end)
    elseif base == "string" then
      add(path, get, function(v) return v == "" and 0 or 1 end)
    elseif base == "list" then
      add(path .. "#", get, function(v) return type(v) == "table" and lengthBucket(#v) or -1 end, true)
    elseif base == "map" then
      add(path .. "#", get, function(v)
        if type(v) ~= "table" then return -1 end
        local n = 0
        for _ in pairs(v) do n = n + 1; if n >= 8 then break end end
        return lengthBucket(n)
      end, true)
    elseif base == "record" then
      for _, k in ipairs(sortedKeys(d)) do
        if type(k) == "string" then
          field(d[k], path .. "." .. k, function(s)
            local parent = get(s)
            return type(parent) == "table" and parent[k] or nil
          end)
        end
      end
    end
  end
  if type(decl) == "table" then
    for _, k in ipairs(sortedKeys(decl)) do
      if type(k) == "string" then field(decl[k], k, function(s) return type(s) == "table" and s[k] or nil end) end
    end
  end
  return probes
end

-- What the runs so far reached, and how much of it the current run reached first.
-- `state(s)`, `sent(type)` and `event(kind, type)` take what a run does; `fresh` counts what
-- it reached first, `freshAt` the first step that did (`step`, set by the run).
local function Novelty(stateDecl, enums)
  local probes = shapeProbes(stateDecl)
  local seenProbe, seenCombo, seenEnum, seenType, seenPair = {}, {}, {}, {}, {}
  for i in ipairs(probes) do seenProbe[i] = {} end
  for i in ipairs(enums) do seenEnum[i] = {} end
  -- `major`: what a feature's logic decides (an enum's value, a type, an action/mutation
  -- pair) rather than a value's shape; a run that reached one is favoured as a parent.
  -- `newAt`: the steps of the run that reached something new, in order.
  local n = { fresh = 0, major = 0, step = 0, lastAction = "", linesReached = 0, newAt = {} }
  local function new(major)
    n.fresh = n.fresh + 1
    if major then
      n.major = n.major + 1
      n.majorAt = n.majorAt or n.step
    end
    if not n.freshAt then n.freshAt = n.step end
    if n.newAt[#n.newAt] ~= n.step then n.newAt[#n.newAt + 1] = n.step end
  end
  function n.begin()
    n.fresh, n.major, n.freshAt, n.majorAt, n.step, n.lastAction, n.newAt = 0, 0, nil, nil, 0, "", {}
  end
  function n.state(s)
    n.lastState = s
    for i, e in ipairs(enums) do
      local seen = seenEnum[i]
      for _, v in ipairs(e.get(s, {})) do
        if not seen[v] then seen[v] = true; new(true) end
      end
    end
    local combo = 0
    for i, p in ipairs(probes) do
      local code = p.code(p.get(s))
      local seen = seenProbe[i]
      if not seen[code] then seen[code] = true; new() end
      if p.combo then combo = combo * 7 + code + 1 end
    end
    if not seenCombo[combo] then seenCombo[combo] = true; new() end
  end
  -- `count` lines of the plugin's own files ran for the first time.
  function n.lines(count)
    if count > 0 then
      n.linesReached = n.linesReached + count
      new(true)
      n.fresh = n.fresh + count - 1
    end
  end
  function n.sent(t)
    n.lastAction = t
    local key = "action " .. t
    if not seenType[key] then seenType[key] = true; new(true) end
  end
  function n.event(kind, t)
    local byKind = seenType[kind]
    if not byKind then byKind = {}; seenType[kind] = byKind end
    if not byKind[t] then byKind[t] = true; new(true) end
    if kind == "mutation" then
      local pairsOf = seenPair[n.lastAction]
      if not pairsOf then pairsOf = {}; seenPair[n.lastAction] = pairsOf end
      if not pairsOf[t] then pairsOf[t] = true; new(true) end
    end
  end
  return n
end

-- MARK: - Values from the state

-- Where a declared state keeps values an action may name: lists of records (their fields,
-- by name) and maps (their keys). Each: { get = function(s) -> the list or map, map = bool }.
local function pools(decl)
  local found = {}
  local function walk(d, get)
    if type(d) ~= "table" or isGen(d) then return end
    local head = type(d[1]) == "string" and d[1]:gsub("%?$", "") or nil
    if head == "list" or head == "map" then
      found[#found + 1] = { get = get, map = head == "map" }
      return
    end
    if head and head ~= "record" then return end
    for _, k in ipairs(sortedKeys(d)) do
      if type(k) == "string" then
        walk(d[k], function(s)
          local parent = get(s)
          return type(parent) == "table" and parent[k] or nil
        end)
      end
    end
  end
  walk(decl, function(s) return s end)
  return found
end

-- The values in `state` an action field named `name` of Lua type `kind` ("integer",
-- "number", "string") may take: the same-named field of list items, else their `id`s and the
-- keys of maps. In a stable order.
local function stateValues(where, state, name, kind)
  local same, ids = {}, {}
  local function fits(v)
    if kind == "integer" then return math.type(v) == "integer" end
    if kind == "number" then return type(v) == "number" end
    return type(v) == kind
  end
  for _, p in ipairs(where) do
    local t = p.get(state)
    if type(t) == "table" then
      if p.map then
        for _, k in ipairs(sortedKeys(t)) do if fits(k) then ids[#ids + 1] = k end end
      else
        for _, item in ipairs(t) do
          if type(item) == "table" then
            if fits(item[name]) then same[#same + 1] = item[name] end
            if name ~= "id" and fits(item.id) then ids[#ids + 1] = item.id end
          end
        end
      end
    end
  end
  return #same > 0 and same or ids
end

-- MARK: - The guide

-- `Guide(ctx, o)`: o.seed, o.first (the first run's number), o.length, o.guided, o.stateDecl,
-- o.enums, o.actions (the declared actions), o.given (opts.gen). `guide.run(n)` is run n to
-- execute; `guide.ran(run, novelty)` keeps it when it reached something new.
local function Guide(o)
  -- `fromCode`: the steps whose action took a number of the plugin's code (weak: a step is
  -- known by its table, which kept runs share).
  local g = { corpus = {}, favoured = {}, newRuns = 0, fromCode = setmetatable({}, { __mode = "k" }) }
  local where = pools(o.stateDecl)
  -- The fields of each action whose values may come from the state.
  local fromState = {}
  for _, name in ipairs(sortedKeys(o.actions)) do
    local decl, given, fields = o.actions[name], (o.given or {})[name] or {}, {}
    if type(decl) == "table" then
      for _, k in ipairs(sortedKeys(decl)) do
        local t = decl[k]
        local base = type(t) == "string" and t:gsub("%?$", "") or nil
        if given[k] == nil and (base == "integer" or base == "number" or base == "string") then
          fields[#fields + 1] = { name = k, kind = base }
        end
      end
    end
    if #fields > 0 then fromState[name] = fields end
  end
  -- The whole-number fields of each action a number of the code may go to.
  local wholeFields = {}
  for name, fields in pairs(fromState) do
    for _, f in ipairs(fields) do
      if f.kind == "integer" then
        wholeFields[name] = wholeFields[name] or {}
        table.insert(wholeFields[name], f.name)
      end
    end
  end

  -- The whole numbers written in the plugin's own file, each with its neighbours: the
  -- values its code compares against (a tier from 7, a capacity of 8), which a uniform draw
  -- from -10 to 100 rarely hits (fuzzers' dictionaries, made from the code). A number is in
  -- the list once for each place that writes it, twice over its neighbours: one the code
  -- compares with in two places is drawn twice as often.
  local dictionary = {}
  do
    local text
    if type(o.source) == "string" and io and io.open then
      local f = io.open(o.source, "r")
      if f then text = f:read("a"); f:close() end
    end
    -- The numbers the code compares with (`qty >= 7`, `20 < n`) and names as constants
    -- (`local CAPACITY = 8`); when there are none, every number written in it.
    text = text or ""
    local function add(literal)
      local v = math.tointeger(tonumber(literal))
      if v and v <= 1000000000 then
        for _, c in ipairs { v - 1, v, v, v + 1 } do dictionary[#dictionary + 1] = c end
      end
    end
    for _, op in ipairs { "[<>]=?", "[=~]=" } do
      for literal in text:gmatch(op .. "%s*%-?(%d+)%f[^%w_.]") do add(literal) end
      for literal in text:gmatch("%f[%w_.](%d+)%s*" .. op) do add(literal) end
    end
    for literal in text:gmatch("local%s+[%u_][%u%d_]*%s*<?c?o?n?s?t?>?%s*=%s*(%d+)%f[^%w_.]") do add(literal) end
    if #dictionary == 0 then
      for literal in text:gmatch("%f[%w_.]%d+%f[^%w_.]") do add(literal) end
    end
    table.sort(dictionary)
  end

  -- Called by the drawer for an action just drawn in a run built from the corpus: fields
  -- that match values in the latest state take one of them, often; whole-number fields
  -- otherwise take a number of the plugin's own code, now and then. True when one did.
  function g.fill(r, action, state)
    local fields = fromState[action.type]
    if not fields then return false end
    local coded = false
    for _, f in ipairs(fields) do
      local values = (#where > 0 and state ~= nil and r.chance(FROM_STATE)) and stateValues(where, state, f.name, f.kind) or {}
      if #values > 0 then action[f.name] = r.pick(values)
      elseif f.kind == "integer" and #dictionary > 0 and r.chance(FROM_CODE) then
        action[f.name] = r.pick(dictionary)
        coded = true
      end
    end
    return coded
  end

  -- The odds of a failure and of a late answer for a call that a step with a number of the
  -- code makes (`faults`: the exploration's own): failures more often, when there are any.
  function g.codeFaults(faults)
    if faults.fail <= 0 then return faults.fail, faults.late end
    local fail = math.max(faults.fail, CODE_FAIL)
    return fail, math.min(faults.late, 1 - fail)
  end

  -- MARK: Mutations (each returns new steps and plan, or nil when it does not apply)

  local function cut(r, parent)
    -- Keep the steps up to somewhere at or after the first that reached something new, and
    -- draw on from there.
    local n = #parent.steps
    local from = math.min(math.max(0, parent.freshAt or 0), n)
    local keep = from < n and r.int(from, n - 1) or n
    local steps = {}
    for i = 1, keep do steps[i] = parent.steps[i] end
    return steps, parent.plan
  end

  local function splice(r, parent)
    if #g.corpus < 2 then return nil end
    local other = g.corpus[r.below(#g.corpus) + 1]
    local a, b = r.int(1, #parent.steps), r.int(1, #other.steps)
    local steps = {}
    for i = 1, a do steps[#steps + 1] = parent.steps[i] end
    for i = b, #other.steps do
      if #steps >= o.length then break end
      steps[#steps + 1] = other.steps[i]
    end
    return steps, parent.plan
  end

  local function repeatStretch(r, parent)
    local n = #parent.steps
    if n == 0 then return nil end
    -- Half the time the stretch ends at the step that reached something new (one more of
    -- what got there may get further: an increment, a wizard's next step).
    local i, j
    local at = parent.freshAt or 0
    if at >= 1 and at <= n and r.chance(0.5) then
      j = at
      i = math.max(1, j - r.below(3))
    else
      i = r.int(1, n)
      j = math.min(n, i + r.below(8))
    end
    local times = r.int(1, 4)
    local steps = {}
    for k = 1, j do steps[#steps + 1] = parent.steps[k] end
    for _ = 1, times do for k = i, j do steps[#steps + 1] = parent.steps[k] end end
    for k = j + 1, n do steps[#steps + 1] = parent.steps[k] end
    while #steps > o.length do steps[#steps] = nil end
    return steps, parent.plan
  end

  local function nudge(r, parent)
    local sends = {}
    for i, s in ipairs(parent.steps) do if s.send then sends[#sends + 1] = i end end
    if #sends == 0 then return nil end
    local at = r.pick(sends)
    -- Half the time the last send at or before the step that reached something new: the value
    -- that got there, one off (a quantity of 8 that reached a tier's line tries 7).
    local fresh = parent.freshAt or 0
    if fresh >= 1 and r.chance(0.5) then
      for k = #sends, 1, -1 do
        if sends[k] <= fresh then at = sends[k]; break end
      end
    end
    local s = parent.steps[at].send
    local gen = o.actionGens and o.actionGens[s.type]
    if not gen or not gen.near then return nil end
    local fields = copy(s)
    fields.type = nil
    local options = gen.near(fields)
    if #options == 0 then return nil end
    local changed = r.pick(options)
    changed.type = s.type
    local steps = {}
    for i, step in ipairs(parent.steps) do steps[i] = step end
    steps[at] = { send = changed }
    -- What came after may not fit the changed state: keep it with even odds, else draw on.
    if r.chance(0.5) then for i = at + 1, #steps do steps[i] = nil end end
    return steps, parent.plan
  end

  local function moveFault(r, parent)
    local calls, faults = 0, {}
    for _, n in ipairs(sortedKeys(parent.plan)) do
      if math.type(n) == "integer" then
        calls = math.max(calls, n)
        if parent.plan[n] then faults[#faults + 1] = n end
      end
    end
    if #faults == 0 then return nil end
    local from = r.pick(faults)
    local to = r.chance(0.5) and from + r.pick { -1, 1 } or r.int(1, calls + 1)
    if to < 1 or to == from then to = from + 1 end
    local plan = copy(parent.plan)
    plan[to], plan[from] = plan[from], plan[to] or false
    return parent.steps, plan
  end

  -- A fault planted at one of the calls the kept run made (which answered as usual there): a
  -- failure, or an answer late by one of the explorer's delays. The kept run's other calls
  -- keep their answers, so what reached something new is reached again, this time with the fault.
  local function plantFault(r, parent)
    if not o.faults or (o.faults.fail <= 0 and o.faults.late <= 0) then return nil end
    local calls = {}
    for _, n in ipairs(sortedKeys(parent.plan)) do
      if math.type(n) == "integer" and not parent.plan[n] then calls[#calls + 1] = n end
    end
    if #calls == 0 then return nil end
    -- The latest call half the time (what the newest steps called), else any.
    local n = r.chance(0.5) and calls[#calls] or r.pick(calls)
    local plan = copy(parent.plan)
    if r.chance(o.faults.fail / (o.faults.fail + o.faults.late)) then plan[n] = "fail"
    else plan[n] = r.pick(o.delays) end
    return parent.steps, plan
  end

  -- The calls each step of a kept run made, by step: { [step] = { call numbers } }.
  local function callsByStep(parent)
    local by = {}
    for _, n in ipairs(sortedKeys(parent.calls or {})) do
      local at = parent.calls[n]
      if math.type(n) == "integer" and at >= 1 and at <= #parent.steps then
        by[at] = by[at] or {}
        table.insert(by[at], n)
      end
    end
    return by
  end

  local function aFault(r)
    if r.chance(math.max(0.5, o.faults.fail / (o.faults.fail + o.faults.late))) and o.faults.fail > 0 then return "fail" end
    if o.faults.late > 0 then return r.pick(o.delays) end
    return "fail"
  end

  -- A fault at the calls of a step that reached something new or took a number of the code:
  -- what got somewhere new (a quantity at a tier) tried again with its call failing.
  local function faultAtStep(r, parent)
    if not o.faults or (o.faults.fail <= 0 and o.faults.late <= 0) then return nil end
    local by, candidates = callsByStep(parent), {}
    local marked = {}
    for _, at in ipairs(parent.newAt or {}) do marked[at] = true end
    for at, step in ipairs(parent.steps) do
      if g.fromCode[step] then marked[at] = true end
    end
    for _, at in ipairs(sortedKeys(marked)) do
      local calls = by[at]
      if calls then
        for _, n in ipairs(calls) do
          if not parent.plan[n] then candidates[#candidates + 1] = n end
        end
      end
    end
    if #candidates == 0 then return nil end
    local plan = copy(parent.plan)
    plan[r.pick(candidates)] = aFault(r)
    return parent.steps, plan
  end

  -- The converse, at once: whole-number steps (stacked: one to four of them) take a number of
  -- the code, and the call each makes meets a fault. A step whose old value made no call (a
  -- quantity refused) gets its call inserted in the plan, the later calls numbered on after it.
  local function codeWithFault(r, parent)
    if #dictionary == 0 or not o.faults or (o.faults.fail <= 0 and o.faults.late <= 0) then return nil end
    local candidates = {}
    for at, step in ipairs(parent.steps) do
      if step.send and wholeFields[step.send.type] then candidates[#candidates + 1] = at end
    end
    if #candidates == 0 then return nil end
    local chosen = {}
    for _ = 1, r.int(1, 4) do chosen[r.pick(candidates)] = true end
    local by = callsByStep(parent)
    local steps, plan = {}, copy(parent.plan)
    for i, step in ipairs(parent.steps) do steps[i] = step end
    local order = sortedKeys(chosen)
    -- From the last: a call inserted for a step leaves the numbers of the calls before it.
    for k = #order, 1, -1 do
      local at = order[k]
      local send = copy(parent.steps[at].send)
      send[r.pick(wholeFields[send.type])] = r.pick(dictionary)
      steps[at] = { send = send }
      g.fromCode[steps[at]] = true
      local own = by[at]
      if own then
        plan[own[1]] = aFault(r)
      else
        local before = 0
        for n, made in pairs(parent.calls or {}) do
          if made < at and n > before then before = n end
        end
        local shifted = {}
        for n, f in pairs(plan) do
          if math.type(n) == "integer" and n > before then shifted[n + 1] = f else shifted[n] = f end
        end
        shifted[before + 1] = aFault(r)
        plan = shifted
      end
    end
    return steps, plan
  end

  local MUTATIONS = {
    { f = cut, w = 30 }, { f = repeatStretch, w = 20 }, { f = splice, w = 10 }, { f = nudge, w = 25 },
    { f = moveFault, w = 5, faults = true }, { f = plantFault, w = 10, faults = true },
    { f = faultAtStep, w = 10, faults = true }, { f = codeWithFault, w = 15, faults = true },
  }
  -- Those that plant faults only where the exploration has faults to plant.
  local withFaults = o.faults ~= nil and (o.faults.fail > 0 or o.faults.late > 0)
  do
    local applicable = {}
    for _, m in ipairs(MUTATIONS) do
      if withFaults or not m.faults then applicable[#applicable + 1] = m end
    end
    MUTATIONS = applicable
  end
  -- How often each mutation was used and how often its run reached something new: a
  -- mutation's weight follows its share of successes (as fuzzers' schedulers weight theirs),
  -- never below a fifth of where it started.
  for _, m in ipairs(MUTATIONS) do m.used, m.won = 0, 0 end
  local function weight(m)
    return m.w * math.max(SCHEDULE_FLOOR, 2 * (m.won + 1) / (m.used + 2))
  end

  -- Run n: uniform (as with guided = false: the same steps from the same seed), or built
  -- from the corpus; the chooser's own source keeps the uniform runs' draws as they were.
  function g.run(n)
    local rngSeed = o.seed * 1000003 + n
    local run = { steps = {}, plan = {}, rng = Random(rngSeed), length = o.length }
    if not o.guided or n - o.first < WARMUP or #g.corpus == 0 then return run end
    local c = Random(rngSeed ~ 0x5851F42D4C957F2D)
    if c.chance(UNIFORM) then return run end
    local parent = c.chance(NEWEST) and (g.favoured[#g.favoured] or g.corpus[#g.corpus])
      or g.corpus[c.below(#g.corpus) + 1]
    local steps, plan
    local total, used = 0, nil
    for _, m in ipairs(MUTATIONS) do total = total + weight(m) end
    for _ = 1, 4 do
      local at, pick = (c.next() >> 11) * (1.0 / 9007199254740992.0) * total, MUTATIONS[#MUTATIONS]
      for _, m in ipairs(MUTATIONS) do
        local w = weight(m)
        if at < w then pick = m; break end
        at = at - w
      end
      steps, plan = pick.f(c, parent)
      if steps then used = pick; break end
    end
    if not steps then
      steps, plan = cut(c, parent)
      used = MUTATIONS[1]
    end
    local own = {}
    for i, s in ipairs(steps) do own[i] = s end
    run.steps, run.plan, run.guided, run.mutation = own, copy(plan), true, used
    return run
  end

  -- After run `run` executed (and passed): kept when it reached something new.
  function g.ran(run, novelty)
    local m = run.mutation
    if m then
      m.used = m.used + 1
      if novelty.fresh > 0 then m.won = m.won + 1 end
    end
    if novelty.fresh == 0 then return end
    g.newRuns = g.newRuns + 1
    if o.guided then
      local kept = {
        steps = run.steps, plan = run.plan, calls = run.calls, newAt = novelty.newAt,
        freshAt = novelty.majorAt or novelty.freshAt,
      }
      g.corpus[#g.corpus + 1] = kept
      if novelty.major > 0 then g.favoured[#g.favoured + 1] = kept end
    end
  end

  return g
end

return { Novelty = Novelty, Guide = Guide }
