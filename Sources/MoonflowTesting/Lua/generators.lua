-- moonflow.generators: `T.gen`'s generators, the seeded random source explore.lua draws its
-- runs with, and the deep copy both use. explore.lua runs this chunk (TestModule.swift loads
-- it and hands it over with explore.lua) with the helpers moonflow_test.lua gives the
-- explorer, and takes what it returns.
--
-- A generator draws a value from a Random and names simpler values for the shrinker to try;
-- `fromSchema` makes one for a field type as the schema language declares it.
local support = ...
local mf = require "moonflow"
local raise = support.raise

-- MARK: - A seeded generator (splitmix64: the same seed draws the same runs everywhere)

local function Random(seed)
  local s = seed
  local r = {}
  function r.next()
    s = s + 0x9E3779B97F4A7C15
    local z = s
    z = (z ~ (z >> 30)) * 0xBF58476D1CE4E5B9
    z = (z ~ (z >> 27)) * 0x94D049BB133111EB
    return z ~ (z >> 31)
  end
  function r.below(n) return (r.next() >> 1) % n end                 -- 0 .. n-1
  function r.int(lo, hi)
    local span = hi - lo
    if span < 0 then return r.next() end                                -- the whole range
    if span == math.maxinteger then return lo + (r.next() >> 1) end
    return lo + r.below(span + 1)
  end
  function r.chance(p) return (r.next() >> 11) * (1.0 / 9007199254740992.0) < p end
  function r.pick(list) return list[r.below(#list) + 1] end
  return r
end

-- MARK: - Generators: draw a value, and name simpler ones for the shrinker

-- `near(v)`: values a step from v toward the generator's boundaries (integers ±1 and the
-- bounds, a string shortened, an enum's other values), which guided exploration (guide.lua)
-- tries in place of v; as `shrink`, an optional's come boxed. Without one, the simpler values.
local Gen = {}
Gen.__index = Gen
Gen.__name = "moonflow.gen"
local function gen(draw, shrink, describe, near)
  shrink = shrink or function() return {} end
  return setmetatable({ draw = draw, shrink = shrink, describe = describe, near = near or shrink }, Gen)
end
local function isGen(v) return getmetatable(v) == Gen end

-- Candidates between v and target, simplest first: the target, then ever closer to v
-- (v - d/2, v - d/4, ..., v - 1), so the shrinker homes in on the boundary in log steps.
local function towards(v, target)
  local out = {}
  if v == target then return out end
  out[1] = target
  local function half(x) if x >= 0 or x == math.mininteger then return x // 2 end return -((-x) // 2) end
  local d = half(v) - half(target)  -- halves first: no overflow between the extremes
  while d ~= 0 do
    local c = v - d
    if c ~= target and c ~= out[#out] then out[#out + 1] = c end
    d = half(d)
  end
  local last = v > target and v - 1 or v + 1
  if last ~= target and last ~= out[#out] then out[#out + 1] = last end
  return out
end

local function clamp(x, lo, hi) return math.max(lo, math.min(hi, x)) end

local G = {}

-- Integers: the edge cases (0, -1, 1, the bounds, the largest and smallest integer) a
-- quarter of the time, else a small number; shrinks toward 0 (or the bound nearest it).
function G.integer(o)
  o = o or {}
  local lo, hi = o.min or math.mininteger, o.max or math.maxinteger
  if lo > hi then raise(("T.gen.integer: min %d is above max %d"):format(lo, hi), 3) end
  local edges = {}
  for _, e in ipairs { 0, -1, 1, lo, hi, 2, 10 } do
    if e >= lo and e <= hi then edges[#edges + 1] = e end
  end
  local smallLo, smallHi = clamp(-10, lo, hi), clamp(100, lo, hi)
  if o.min or o.max then smallLo, smallHi = lo, hi end
  local target = clamp(0, lo, hi)
  return gen(function(r)
    if r.chance(0.25) then return r.pick(edges) end
    return r.int(smallLo, smallHi)
  end, function(v) return towards(v, target) end, nil, function(v)
    if math.type(v) ~= "integer" then return { target } end
    local out = {}
    if v > lo then out[#out + 1] = v - 1 end
    if v < hi then out[#out + 1] = v + 1 end
    if lo ~= v and lo ~= v - 1 then out[#out + 1] = lo end
    if hi ~= v and hi ~= v + 1 then out[#out + 1] = hi end
    return out
  end)
end

function G.number(o)
  o = o or {}
  local ints = G.integer(o)
  local lo, hi = o.min or -1e9, o.max or 1e9
  return gen(function(r)
    if r.chance(0.5) then return ints.draw(r) end
    return clamp(r.pick { 0.5, -1.5, 1e-9, 3.25, 1e15 }, lo, hi)
  end, function(v)
    if math.type(v) == "float" then return { clamp(0, lo, hi), math.floor(v) } end
    return ints.shrink(v)
  end, nil, function(v)
    if math.type(v) == "float" then return { clamp(0, lo, hi), clamp(math.floor(v), lo, hi) } end
    return ints.near(v)
  end)
end

local LONG = ("long-"):rep(200)
local SAMPLES = { "", " ", "a", "héllo wörld", "日本語", "🙂", "x\ny", LONG, "0", "-1" }
local ALPHABET = { "a", "b", "c", "x", "y", "z", " ", "A", "Z", "0", "9", "-", "_", ".", "@", "é" }
function G.string(o)
  o = o or {}
  local min, max = o.min or 0, o.max or 12
  return gen(function(r)
    if r.chance(0.35) then
      local s = r.pick(SAMPLES)
      if #s >= min and (not o.max or #s <= max) then return s end
    end
    local n, out = r.int(min, max), {}
    for i = 1, n do out[i] = r.pick(ALPHABET) end
    return table.concat(out)
  end, function(v)
    local out = {}
    if #v > min then
      out[#out + 1] = ("a"):rep(min)
      local half = v:sub(1, math.max(min, #v // 2))
      if utf8.len(half) and half ~= out[1] then out[#out + 1] = half end
    end
    return out
  end, nil, function(v)
    local out = {}
    if #v > min then
      local last = utf8.offset(v, -1)
      local shorter = last and v:sub(1, last - 1)
      if shorter and #shorter >= min then out[#out + 1] = shorter end
      local half = v:sub(1, math.max(min, #v // 2))
      if utf8.len(half) and half ~= shorter then out[#out + 1] = half end
    end
    return out
  end)
end

function G.boolean()
  return gen(function(r) return r.chance(0.5) end, function(v) return v and { false } or {} end, nil,
    function(v) return { not v } end)
end

function G.constant(v) return gen(function() return v end) end

-- One of the values (or generators) given; shrinks toward the first.
function G.oneOf(values)
  if type(values) ~= "table" or #values == 0 then raise("T.gen.oneOf{...}: give a non-empty list of values or generators", 3) end
  return gen(function(r)
    local v = r.pick(values)
    if isGen(v) then return v.draw(r) end
    return v
  end, function(v)
    local out = {}
    for _, c in ipairs(values) do
      if c == v then break end
      if not isGen(c) then out[#out + 1] = c end
    end
    return out
  end, nil, function(v)
    local out = {}
    for _, c in ipairs(values) do
      if c ~= v and not isGen(c) then out[#out + 1] = c end
    end
    return out
  end)
end

function G.optional(g, p)
  p = p or 0.25
  return gen(function(r) if r.chance(p) then return nil end return g.draw(r) end, function(v)
    if v == nil then return {} end
    local list = { { none = true } }
    for _, c in ipairs(g.shrink(v)) do list[#list + 1] = { value = c } end
    return list, true
  end, nil, function(v)
    if v == nil then return {} end
    local list = { { none = true } }
    for _, c in ipairs(g.near(v)) do list[#list + 1] = { value = c } end
    return list, true
  end)
end

-- Candidates of an optional come boxed ({ none = true } or { value = v }): nil is a value.
local function candidates(g, v, near)
  local list, boxed
  if near then list, boxed = g.near(v) else list, boxed = g.shrink(v) end
  if boxed then return list end
  local out = {}
  for i, c in ipairs(list) do out[i] = { value = c } end
  return out
end

-- A table's keys in a fixed order (by their text; none for a non-table): what the explorer
-- and guide.lua walk, so a seed draws the same runs whatever order `pairs` takes.
local function sortedKeys(t)
  local out = {}
  if type(t) == "table" then for k in pairs(t) do out[#out + 1] = k end end
  table.sort(out, function(a, b) return tostring(a) < tostring(b) end)
  return out
end

-- A deep copy; a list or object marked with mf.array / mf.object keeps its mark.
local function copy(t)
  if type(t) ~= "table" then return t end
  local mark = getmetatable(t)
  local out = mark == "moonflow.array" and mf.array() or mark == "moonflow.object" and mf.object() or {}
  for k, v in pairs(t) do
    if type(v) == "table" then v = copy(v) end
    out[k] = v
  end
  return out
end

function G.list(g, o)
  o = o or {}
  local min, max = o.min or 0, o.max or 3
  return gen(function(r)
    local out = mf.array()
    for i = 1, r.int(min, max) do out[i] = g.draw(r) end
    return out
  end, function(v)
    local out = {}
    if #v > min then
      local shorter = mf.array()
      for i = 1, #v - 1 do shorter[i] = copy(v[i]) end
      out[#out + 1] = shorter
    end
    return out
  end)
end

function G.map(g)
  return gen(function(r)
    local out = mf.object()
    for _ = 1, r.int(0, 2) do out[r.pick { "a", "b", "key", "é" }] = g.draw(r) end
    return out
  end, function(v) return next(v) ~= nil and { mf.object() } or {} end)
end

-- A table of field generators: each field drawn, each shrunk on its own.
function G.record(fields)
  local names = {}
  for k in pairs(fields) do names[#names + 1] = k end
  table.sort(names)
  return gen(function(r)
    local out = {}
    for _, k in ipairs(names) do out[k] = fields[k].draw(r) end
    return out
  end, function(v)
    local out = {}
    for _, k in ipairs(names) do
      for _, c in ipairs(candidates(fields[k], v[k])) do
        local t = copy(v)
        t[k] = c.value
        out[#out + 1] = t
      end
    end
    return out
  end, nil, function(v)
    local out = {}
    for _, k in ipairs(names) do
      for _, c in ipairs(candidates(fields[k], v[k], true)) do
        local t = copy(v)
        t[k] = c.value
        out[#out + 1] = t
      end
    end
    return out
  end)
end

local function anything()
  return G.oneOf { 0, "x", true, G.constant(nil), { a = 1 } }
end

-- A generator for a declared field type, as the schema language writes it.
local function fromSchema(decl, at)
  if isGen(decl) then return decl end
  if type(decl) == "string" then
    local optional = decl:sub(-1) == "?"
    local base = optional and decl:sub(1, -2) or decl
    local g
    if base == "integer" then g = G.integer()
    elseif base == "number" then g = G.number()
    elseif base == "string" then g = G.string()
    elseif base == "boolean" then g = G.boolean()
    elseif base == "table" then g = G.oneOf { G.constant(mf.object()), G.constant({ a = 1 }) }
    elseif base == "any" then g = anything()
    else raise(("T.explore: %s has a type it cannot draw values of: %q"):format(at, decl), 4) end
    return optional and G.optional(g) or g
  end
  if type(decl) ~= "table" then raise(("T.explore: %s must be a type name or a table (got %s)"):format(at, type(decl)), 4) end
  local head = decl[1]
  if type(head) == "string" then
    local optional = head:sub(-1) == "?"
    local kind = optional and head:sub(1, -2) or head
    local g
    if kind == "enum" then
      local values = {}
      for i = 2, #decl do values[#values + 1] = decl[i] end
      g = G.oneOf(values)
    elseif kind == "list" then g = G.list(fromSchema(decl.of, at .. "[]"))
    elseif kind == "map" then g = G.map(fromSchema(decl.of, at .. "{}"))
    elseif kind == "record" then
      local fields = {}
      for k, v in pairs(decl) do if type(k) == "string" then fields[k] = fromSchema(v, at .. "." .. k) end end
      g = G.record(fields)
    else raise(("T.explore: %s: unknown composite type %q"):format(at, head), 4) end
    return optional and G.optional(g) or g
  end
  local fields = {}
  for k, v in pairs(decl) do fields[k] = fromSchema(v, at .. "." .. tostring(k)) end
  return G.record(fields)
end

-- `T.gen`: an unknown name lists the generators G has, so the message and the table cannot disagree.
setmetatable(G, { __index = function(_, k)
  local names = {}
  for name in pairs(G) do names[#names + 1] = name end
  table.sort(names)
  error(("T.gen has no '%s'; it has %s"):format(tostring(k), table.concat(names, ", ")), 2)
end })

return { G = G, Random = Random, isGen = isGen, towards = towards, copy = copy, fromSchema = fromSchema, sortedKeys = sortedKeys }
