-- The Lua half of a feature's dispatch (LuaDispatch.swift runs it once per Lua state with
-- getmetatable and setmetatable that `__metatable` does not stop, an empty JSON array,
-- `rearm` (the running call's time limit afresh), `flat` (FlatShapes.matches in C),
-- `params` (a function's named parameters and whether it takes `...`, in C) and `fits`
-- (whether a write may wait in Lua until the state is read, in C), and reads the table it
-- returns once, field by field by name): the views of the state, the calls into a
-- definition's functions, and a feature's `env`. Swift reads every field and this table has
-- every field Swift reads; loading fails otherwise (DispatchExports).
local rawgetmetatable, rawsetmetatable, emptyArray, rearm, flat, params, fits = ...
local pairs, rawnext, type, error, tostring, setmetatable = pairs, next, type, error, tostring, setmetatable
local rawget, rawset, rawlen, select = rawget, rawset, rawlen, select
local match, format, sort = string.match, string.format, table.sort
local unpack, withInputs = table.unpack, nil  -- withInputs(env, stubs): `inputs` (last below) fills an env
local targets = setmetatable({}, { __mode = "k" })   -- view -> the table it shows
local views = setmetatable({}, { __mode = "k" })     -- table -> its view in the running call
local paths = setmetatable({}, { __mode = "k" })     -- view -> `state.items[2]` (nil: `state`)
local calls = setmetatable({}, { __mode = "k" })     -- view -> the call it was made in
local RO = { __metatable = "a read-only view of the state" }

-- `mf.out`, which an `mf.compose`'s `react` returns where a child's name would go to pass the
-- effect out; `outs` hands Swift `true` in its place (every odd value of react's results).
local OUT = setmetatable({}, { __metatable = "mf.out", __tostring = function() return "mf.out" end })
local function outs(...)
  local n = select("#", ...)
  if n == 0 then return end
  local r = { ... }
  for i = 1, n, 2 do
    if r[i] == OUT then r[i] = true end
  end
  return unpack(r, 1, n)
end

-- How a reduce's writes reach Swift, the third value `reduce` returns; exported as
-- `reduceOutcomes`, whose names and numbers Swift's ReduceOutcome must have: `inPlace`,
-- the state's own table written in place (the writes follow); `twoPlaces`, a table of it now
-- in two places, and `anotherTable`, another table (read whole); `pending`, writes that
-- wait in Lua (`takePending`).
local inPlace <const>, twoPlaces <const>, anotherTable <const>, pending <const> = 0, 1, 2, 3
-- Which half of a one-call `step` runs, in `stage[1]` (Swift's StepStage, `stepStages`).
local outside <const>, handling <const>, reducing <const> = 0, 1, 2

-- The state's shape, for strict access (LuaFeature registers it per definition with
-- `setShape`): a record is { r = { field = shape } }, a list { l = shape }, a map
-- { m = shape }; `false` stands for anything not looked inside (a scalar, an enum,
-- `table`, `any`). Each view knows the shape of the table it shows. Only a read that
-- finds nil and a write to a key not there yet look at it: a field the record lacks
-- fails at once (a declared `state`) or warns once per site (one inferred from `initial`).
-- `t` says what a scalar written there must be (C `fits`, views.c): a record's
-- { field = code }, a list's or map's item code; a code is "string", "integer",
-- "number", "boolean", "table", "any" or an enum's { name = true }.
local shapeOf = setmetatable({}, { __mode = "k" })   -- definition table -> its state's shape
local rshape = setmetatable({}, { __mode = "k" })    -- read-only view -> shape of what it shows
local function childShape(s, k)
  if not s then return nil end
  local r = s.r
  if r then return r[k] or nil end
  return s.l or s.m or nil
end
local function prepare(s, cfg)
  if not s then return end
  s.cfg = cfg
  if s.r then
    local names = {}
    for k, c in pairs(s.r) do names[#names + 1] = k; prepare(c, cfg) end
    sort(names)
    s.names = names
  else
    prepare(s.l or s.m, cfg)
  end
end
local function setShape(def, shape, strict, report)
  prepare(shape, { strict = strict, report = report })
  shapeOf[def] = shape or nil
end
-- A field the record `s` lacks, read (found nil) or written at `place` by the code
-- `level` calls up. The feature's `report` (Swift) words it, with its did-you-mean from
-- the record's names: an error raised there (declared), or, for a state inferred from
-- `initial`, a warning it logs once per site itself (nothing comes back).
local function unknown(s, place, k, writing, level)
  if type(k) ~= "string" then return end
  local cfg = s.cfg
  if writing and not cfg.strict then return end
  local message = cfg.report(place, k, level + 1, unpack(s.names))
  if message then error(message, level + 1) end
end
local function child(path, k)
  if type(k) == "string" and match(k, "^[%a_][%w_]*$") then return path .. "." .. k end
  return path .. "[" .. tostring(k) .. "]"
end
-- A view is valid only while the call it was handed to runs (a handle or an effect
-- handler; they may nest): kept past it, any use fails naming the field, in a later
-- call too. So each call gets views of its own: `running[d]` is the call running at
-- depth d (roCount[1] deep now), a number that says its depth (DEPTHS * serial + d),
-- and a view is valid while the call it was made in is still running at its depth.
local roCount, roCloseMT = { 0 }, {}   -- Swift gives roCloseMT a C __close counting roCount[1] down
local roClose = setmetatable({}, roCloseMT)
local running, serial, DEPTHS = {}, 0, 1 << 20
-- What kind of call a view was handed to, for the message when one is kept past it:
-- the kind rides in the call's number (serial * KINDS + kind), so it costs nothing.
local KINDS, kindNames = 2, { [0] = "handle", [1] = "effect handler" }
local function enter(kind)
  local d = roCount[1] + 1
  roCount[1] = d
  serial = serial + 1
  running[d] = (serial * KINDS + (kind or 0)) * DEPTHS + d
end
local function kindOf(v) return kindNames[(calls[v] // DEPTHS) % KINDS] end
-- Whether a handler can reach the state it would be handed: it declares a second
-- parameter or takes `...`. One that does not (`handle = function(action)`) is called
-- with its first argument alone and gets no view (nor a depth): nothing it runs can see
-- the state, so there is nothing to guard, and a view is most of a step's cost.
local seesState = setmetatable({}, { __mode = "k" })  -- function -> boolean
local function takesState(f)
  local sees = seesState[f]
  if sees ~= nil then return sees end
  local n, varargs = params(f)
  sees = n >= 2 or varargs
  if type(f) == "function" then seesState[f] = sees end
  return sees
end
-- Returns what it is given: `return all(f(x))` calls f from here, not as a tail call, so
-- a traceback still names the handler (`in field 'handle'`) and the line that called it.
local function all(...) return ... end
local function live(v)
  local call = calls[v]
  local d = call % DEPTHS
  return d <= roCount[1] and running[d] == call
end
-- The state's own view, made at every call (a call costs one small table): the root is
-- reached only so, so it needs no place in `views`, and its path is `state`.
-- The shape of the state a call at depth d was handed (the root views' shape: kept per
-- depth, not per view, so a call costs no more entries in the weak tables).
local callShape = {}
local function rootView(t, shape)
  local v = setmetatable({}, RO)
  local d = roCount[1]
  targets[v], calls[v] = t, running[d]
  callShape[d] = shape
  return v
end
-- The shape of what a live read-only view shows.
local function shapeOfView(v)
  local s = rshape[v]
  if s == nil and paths[v] == nil then s = callShape[calls[v] % DEPTHS] end
  return s
end
local function pathOf(v) return paths[v] or "state" end
local function view(t, path, shape)
  local call = running[roCount[1]]
  local v = views[t]
  if v and calls[v] == call then return v end
  v = setmetatable({}, RO)
  views[t], targets[v], paths[v], calls[v], rshape[v] = v, t, path, call, shape
  return v
end
local function stale(path, call)
  error(format("%s: this view of the state was kept after its %s call returned; a view is valid only during the call (read the values you need into locals before returning)", path, call), 3)
end
RO.__index = function(v, k)
  if not live(v) then stale(child(pathOf(v), k), kindOf(v)) end
  local value = targets[v][k]
  if type(value) ~= "table" then
    if value == nil then
      local s = shapeOfView(v)
      if s and s.r and s.r[k] == nil then unknown(s, pathOf(v), k, false, 2) end
    end
    return value
  end
  return view(value, child(pathOf(v), k), childShape(shapeOfView(v), k))
end
RO.__newindex = function(v, k)
  error(format("%s is read-only here: the state changes only in reduce; return a mutation that reduce applies", child(pathOf(v), k)), 2)
end
RO.__len = function(v)
  if not live(v) then stale(pathOf(v), kindOf(v)) end
  return #targets[v]
end
local function viewNext(v, k)
  if not live(v) then stale(pathOf(v), kindOf(v)) end
  local nk, nv = rawnext(targets[v], k)
  if type(nv) == "table" then return nk, view(nv, child(pathOf(v), nk), childShape(shapeOfView(v), nk)) end
  return nk, nv
end
RO.__pairs = function(v) return viewNext, v, nil end

-- A Lua service (or a spec's stub) may keep what it is given (a draft to save later, a
-- spy's arguments): a read view among its arguments, or directly in a table argument,
-- becomes a plain copy of what the view shows, taken when the service is called.
local function copyOf(t, memo)
  local c = memo[t]
  if c then return c end
  c = {}
  memo[t] = c
  for k, x in rawnext, t do c[k] = type(x) == "table" and copyOf(x, memo) or x end
  local mt = rawgetmetatable(t)
  if mt ~= nil then rawsetmetatable(c, mt) end  -- mf.array / mf.object marks
  return c
end
local function ownedOne(x, memo)
  if type(x) ~= "table" then return x end
  if targets[x] then
    if not live(x) then stale(pathOf(x), kindOf(x)) end
    return copyOf(targets[x], memo)
  end
  if rawgetmetatable(x) == nil then
    local copied
    for k, y in rawnext, x do
      if type(y) == "table" and targets[y] then
        if copied == nil then
          copied = {}
          for k2, y2 in rawnext, x do copied[k2] = y2 end
        end
        copied[k] = ownedOne(y, memo)
      end
    end
    return copied or x
  end
  return x
end
local function owned(...)
  local n = select("#", ...)
  if n == 0 then return end
  local memo, args = {}, { ... }
  for i = 1, n do args[i] = ownedOne(args[i], memo) end
  return unpack(args, 1, n)
end

-- Write views: what `reduce` gets. Reads go through to the state (nested tables as
-- views too); writes go to the state and are logged, for an exact rollback (`undo`)
-- and so that the snapshot copies only what changed. Each view knows its place (the
-- parent view and key it was last reached through); `reduce` lets the views go once 256
-- have been made, so the state's tables keep at most that many. A table in two places at once
-- (`state.b = state.a`) makes the reduce report "shared", and Swift then re-reads the
-- whole state and rebuilds the table, so each place changes on its own afterwards.
local wtargets = setmetatable({}, { __mode = "k" })  -- view -> the table it shows
local wviews = setmetatable({}, { __mode = "k" })    -- table -> its view
local wparent = setmetatable({}, { __mode = "k" })   -- view -> parent view (nil: a root)
local wkey = setmetatable({}, { __mode = "k" })      -- view -> key in the parent
local wshape = setmetatable({}, { __mode = "k" })    -- view -> shape of what it shows (strict access)
local W = { __metatable = "the state, as reduce sees it" }
-- Written by the views' __index and __newindex (C: mf_install_write_view_access),
-- each list with its count at [0].
local log = {}     -- parent view, key, old value: per write
-- The reduce a view was last handed out in (reached through the state, or the root):
-- log[-1] is the running reduce's number (false between reduces), log[-2] this table.
-- A view kept from an earlier reduce fails in a later one until reached again (while it is kept).
local wstamp = setmetatable({}, { __mode = "k" })
local storedBefore = setmetatable({}, { __mode = "k" })  -- table a reduce stored -> true
local wepoch = 0
log[-2] = wstamp
local stored = {}  -- table stored, parent view, key: per write of a table
local marked, nmarked = {}, 0  -- table, old metatable: per mf.array/mf.object in reduce
local shared = false
local root                     -- the state's view during a reduce
local function attached(v)
  while v ~= root do
    local p = wparent[v]
    if p == nil or rawget(wtargets[p], wkey[v]) ~= wtargets[v] then return false end
    v = p
  end
  return true
end
local nviews, keptViews = 0, 256  -- views made since `reduce` last let them go, and how many it keeps
local function wview(t, p, k)
  local v = wviews[t]
  if v == nil then
    nviews = nviews + 1
    v = setmetatable({}, W)
    wviews[t], wtargets[v], wparent[v], wkey[v], wshape[v] = v, t, p, k, childShape(wshape[p], k)
    wstamp[v] = wepoch
    return v
  end
  wstamp[v] = wepoch
  if wparent[v] ~= p or wkey[v] ~= k then
    wshape[v] = childShape(wshape[p], k)
    local op = wparent[v]
    if op == nil or (rawget(wtargets[op], wkey[v]) == t and attached(op)) then shared = true end
    wparent[v], wkey[v] = p, k
  end
  return v
end
-- Kept past its reduce, a write view refuses every use, in a later reduce too (the C
-- __index and __newindex look at log[-1] and the view's stamp).
local function wkeyName(v) local k = wkey[v]; return k == nil and "state" or tostring(k) end
-- `state.items[2]`: the write view's place, from its parents (for messages only).
local function wpath(v)
  local p = wparent[v]
  if p == nil then return "state" end
  return child(wpath(p), wkey[v])
end
-- The C __index and __newindex call this for a string key whose value is nil (a read)
-- or not there yet (a write), before the write.
local function wcheck(v, k, writing)
  local s = wshape[v]
  if s and s.r and s.r[k] == nil then unknown(s, wpath(v), k, writing, 3) end
end
W.__len = function(v)
  if root == nil or wstamp[v] ~= wepoch then stale(wkeyName(v), "reduce") end
  return rawlen(wtargets[v])
end
local function wnext(v, k)
  if root == nil or wstamp[v] ~= wepoch then stale(wkeyName(v), "reduce") end
  local nk, nv = rawnext(wtargets[v], k)
  if type(nv) == "table" then nv = wview(nv, v, nk) end
  return nk, nv
end
W.__pairs = function(v) return wnext, v, nil end
local changes, seen = {}, {}
-- After reduce returned `s`: 0 (in place) with the writes that still reach the state
-- (per write: the number of keys from the root, the keys, the parent table, the value),
-- or 1 (a table in two places), or 2 (another table): Swift reads those whole; or 3
-- (pending): every write was a plain scalar the declared state takes there, and stays
-- in `changes` for Swift to read later (`takePending`, once a drain ends or when someone
-- reads the state). Slots 1..npending are such writes of reduces Swift has not read:
-- each holds the value its reduce ended with, one slot per place (a later write to the
-- same table and key updates it), and no write has moved a table since (any write of a
-- table, or of nil, is read by Swift at once, with the pending ones in front).
local nchanges, npending, pathkeys = 0, 0, {}
local rescue = -1  -- npending before a reduce Swift was handed (undo puts it back), or -1
local overwritten, noverwritten = {}, 0  -- slot, value it held: per pending value a reduce updated
local pslot = setmetatable({}, { __mode = "k" })  -- table -> key -> its pending value's slot
local lazyNow = false
local function finish(...)
  local r = root
  local s, e = ...
  log[-1] = false
  if s == nil and select("#", ...) == 0 then root = nil; return end
  local before = npending
  rescue = before
  -- Swift reads the whole state (pending writes included) when the table is not the one given.
  if s ~= r then root, npending = nil, 0; return s, e, anotherTable end
  local nlog, nstored = log[0], stored[0]
  for i = 1, nstored, 3 do
    local u, p, k = stored[i], stored[i + 1], stored[i + 2]
    -- Still there: it has this place now (shared when its old place holds it too).
    if rawget(wtargets[p], k) == u then
      -- Stored by an earlier reduce, and not reached through the state in this one: held
      -- from outside (an upvalue), its view and old place gone with that reduce's views, so
      -- its old place may hold it still: read whole, as a table in two places is.
      if wviews[u] == nil and storedBefore[u] then shared = true end
      wview(u, p, k)
      storedBefore[u] = true
    end
  end
  if shared then root, npending = nil, 0; return s, e, twoPlaces end
  local n, keys = before, pathkeys
  local lazy, strict = lazyNow, false
  if lazy then  -- a declared state (its shape says so) checks what waits
    local rs = wshape[r]
    strict = rs and rs.cfg.strict
  end
  if nlog > 3 then seen = {} end
  for i = 1, nlog, 3 do
    local p, k = log[i], log[i + 1]
    local fresh = true
    if nlog > 3 then
      local ks = seen[p]
      if ks == nil then ks = {}; seen[p] = ks end
      fresh = not ks[k]
      ks[k] = true
    end
    if fresh and (p == r or attached(p)) then
      local d, c = 0, p
      while c ~= r do
        d = d + 1
        local key = wkey[c]
        keys[d] = key
        if lazy then lazy = fits(nil, key, true) end  -- a string or an integer
        c = wparent[c]
      end
      changes[n + 1] = d + 1
      for j = d, 1, -1 do changes[n + 2 + d - j] = keys[j] end
      local t = wtargets[p]
      local v = rawget(t, k)
      -- A plain scalar the declared state takes there (C `fits`, views.c: the shape's `t`
      -- codes); anything else Swift reads and checks at once, and refuses with its message.
      if lazy then lazy = fits(strict and wshape[p], k, v) end
      changes[n + d + 2], changes[n + d + 3], changes[n + d + 4] = k, t, v
      n = n + d + 4
    end
  end
  root = nil
  if n > nchanges then nchanges = n end
  if not lazy then
    npending = 0
    return s, e, inPlace, changes, n
  end
  -- Pending: a write to a place already pending updates that slot; the others move down.
  local w, i = before, before + 1
  while i <= n do
    local size = changes[i] + 3
    local k, t, v = changes[i + size - 3], changes[i + size - 2], changes[i + size - 1]
    local slots = pslot[t]
    local at = slots and slots[k]
    if at and at <= before and changes[at - 1] == t and changes[at - 2] == k then
      -- Kept for undo: Swift may still refuse this reduce (its effect).
      overwritten[noverwritten + 1], overwritten[noverwritten + 2] = at, changes[at]
      noverwritten = noverwritten + 2
      changes[at] = v
    else
      if w + 1 ~= i then for j = 0, size - 1 do changes[w + 1 + j] = changes[i + j] end end
      if slots == nil then slots = {}; pslot[t] = slots end
      slots[k] = w + size
      w = w + size
    end
    i = i + size
  end
  npending = w
  return s, e, pending
end
local function reduce(def, state, m, lazy)
  -- Let go of what the last reduce logged (false, not nil: refilling a slot stays fast).
  for i = 1, log[0] do log[i] = false end
  for i = 1, stored[0] do stored[i] = false end
  for i = npending + 1, nchanges do changes[i] = false end
  for i = 1, nmarked do marked[i] = false end
  log[0], stored[0], nchanges, nmarked, shared, rescue = 0, 0, npending, 0, false, -1
  noverwritten = 0
  local v = wviews[state]  -- the root's view, as wview(state, nil, nil) finds it, without the call
  -- Once reduces have made `keptViews` views, they go, the root's excepted: kept, every table
  -- a reduce ever reached or stored would keep its view and five weak entries for as long as
  -- it is in the state (a list of 5,000 records twice its own size in Lua). Until then a table
  -- reached again reuses its view, as a reduce that reads one line of a list each time does.
  -- A view the plugin kept is stale until reached again; a table stored again is known by
  -- `storedBefore` once its view is gone.
  if nviews > keptViews then
    wviews, nviews = setmetatable({}, { __mode = "k" }), 0
    if v ~= nil then wviews[state] = v end
  end
  if v == nil or wparent[v] ~= nil then v = wview(state, nil, nil) end
  wshape[v] = shapeOf[def]
  lazyNow = lazy
  root = v
  wepoch = wepoch + 1
  wstamp[v] = wepoch
  log[-1] = wepoch
  return finish(def.reduce(root, m))
end
-- The pending writes (the list and its count) for Swift to read, and whether a reduce is
-- running (its writes so far are in the tables, not in the list): none are pending after.
local function takePending()
  local n = npending
  npending, rescue = 0, -1
  pslot = setmetatable({}, { __mode = "k" })
  return changes, n, root ~= nil
end
local function undo()
  for i = log[0] - 2, 1, -3 do rawset(wtargets[log[i]], log[i + 1], log[i + 2]) end
  for i = nmarked - 1, 1, -2 do rawsetmetatable(marked[i], marked[i + 1]) end
  if rescue >= 0 then  -- what a failed reduce's finish handed over or updated is pending again, as it was
    npending = rescue
    for i = noverwritten - 1, 1, -2 do changes[overwritten[i]] = overwritten[i + 1] end
  end
  rescue, noverwritten = -1, 0
  root = nil
  log[-1] = false
end
-- mf.array(t) / mf.object(t): `kind` is "array" or "object". The markers are shared by
-- every table of their kind, so `__metatable` keeps them from scripts, and they are set
-- and read here past it. In reduce, mf.array(state.x) marks the table the view shows and
-- counts as a write of it (undone with the rest).
local markers = {
  array = rawgetmetatable(emptyArray),
  object = { __name = "moonflow.object", __metatable = "moonflow.object" },
}
local function mark(t, kind)
  local mt = markers[kind]
  local target = wtargets[t]
  if target == nil then return rawsetmetatable(t, mt) end
  if root == nil or wstamp[t] ~= wepoch then stale(wkeyName(t), "reduce") end
  marked[nmarked + 1], marked[nmarked + 2] = target, rawgetmetatable(target)
  nmarked = nmarked + 2
  rawsetmetatable(target, mt)
  local p, k = wparent[t], wkey[t]
  if p ~= nil then
    local nlog = log[0]
    log[nlog + 1], log[nlog + 2], log[nlog + 3] = p, k, target
    log[0] = nlog + 3
  end
  return t
end
local function viewTarget(t) return wtargets[t] or t end

-- One action's whole synchronous trip in one call (LuaFeature's `step`): `handle`, and
-- when it returned one mutation `flat` (FlatShapes.matches, in C) vouches for, `reduce`
-- too; anything else is left to Swift's full check. Returns the
-- mutation alone (Swift goes on as after a `handle` call), or the mutation, `true` and
-- what `reduce` returns. `stage[1]` says where a raised error came from: `handling` or
-- `reducing` (Swift reads and clears it after an error).
local stage = { outside }
local mshapes = setmetatable({}, { __mode = "k" })  -- definition table -> its mutations' flat shapes
local function setMutationShapes(def, shapes) mshapes[def] = shapes end

-- rawget, rawset and rawlen refuse views (C: every state's own raw functions call this,
-- registered by LuaDispatch, with the level of the script's code that called them): a raw
-- write would land in the empty view itself, hiding the state's field behind it for good.
local function refuseRaw(name, t, k, level)
  local path = targets[t] and (k == nil and pathOf(t) or child(pathOf(t), k))
    or (k == nil and wkeyName(t) or tostring(k))
  error(format("%s on %s: the state is a view, not a plain table; use %s", name, path,
    name == "rawset" and "an ordinary assignment, in reduce" or "ordinary indexing (or # for the length)"), level or 3)
end
-- Installed by feature hosts only (not `moonflow exec`, which keeps Lua's own `next`):
-- `next(view)` as `next(table)` would see it (`if next(state.items) == nil then`).
local function installNext()
  next = function(t, k)
    if targets[t] then return viewNext(t, k) end
    if wtargets[t] then return wnext(t, k) end
    return rawnext(t, k)
  end
end
-- What LuaDispatch.swift reads, each field by its name (LuaKit takes the views' fields).
return {
  -- The views, for LuaKit's C: read-only views' metatable, targets, `__close` metatable and
  -- count; write views' metatable, targets, undo log, stored tables, wrapper and key check;
  -- the refuser of rawget, rawset and rawlen on a view.
  readOnlyViews = RO, readOnlyTargets = targets, readOnlyClose = roCloseMT, readOnlyCount = roCount,
  writeViews = W, writeTargets = wtargets, writeLog = log, writeStored = stored, writeWrap = wview,
  writeCheck = wcheck, refuseRaw = refuseRaw,
  undo = undo, installNext = installNext, mark = mark, viewTarget = viewTarget,
  handle = function(def, action, state, env)
    if not takesState(def.handle) then return all(def.handle(action)) end enter()
    local _ <close> = roClose
    return def.handle(action, rootView(state, shapeOf[def]), env)
  end,
  reduce = reduce,
  effect = function(def, kind, effect, state, env)
    if not takesState(def.effects[kind]) then return all(def.effects[kind](effect)) end enter(1)
    local _ <close> = roClose
    return def.effects[kind](effect, rootView(state, shapeOf[def]), env)
  end,
  request = function(def, kind, request, env) return def.requests[kind](request, env) end,
  makeEnv = function(def, swiftServices, interactors, asStream, overrides, late, envOverrides)
    -- A name the feature was loaded without asks `late` (a service registered since).
    local services = late and setmetatable({}, { __index = late }) or {}
    for k, v in pairs(swiftServices) do services[k] = v end
    if def.services then
      for k, v in pairs(def.services) do
        services[k] = function(...)
          local s, err = asStream(k, v(owned(...)))
          if s == nil then error(err, 2) end  -- at the line that called the service
          return s
        end
      end
    end
    if overrides then
      for k, v in pairs(overrides) do
        services[k] = type(v) == "function" and function(...) return v(owned(...)) end or v
      end
    end
    return withInputs({ services = services, interactors = interactors }, envOverrides)
  end,
  migrate = function(def, old, from) return def.migrate(old, from) end,
  route = function(def, action, state) return def.route(action, state) end,
  combine = function(def, states) return def.combine(states) end,
  mapEffect = function(def, childName, effect) return def.mapEffect(childName, effect) end,
  react = function(def, childName, effect, state) return outs(def.react(childName, effect, state)) end,
  out = OUT,
  identity = function(...) return ... end,
  setShape = setShape,
  step = function(def, action, state, env, lazy)
    stage[1] = handling
    local m
    if not takesState(def.handle) then m = def.handle(action) else
      enter()
      local _ <close> = roClose
      m = def.handle(action, rootView(state, shapeOf[def]), env)
    end
    local shapes = mshapes[def]
    if shapes == nil or not flat(shapes, m) then stage[1] = outside; return m end
    stage[1] = reducing   -- left so after reduce returns: Swift reads it only when this call raised
    rearm()        -- reduce gets its whole time limit, as a call of its own would
    return m, true, reduce(def, state, m, lazy)
  end,
  stepStage = stage, setMutationShapes = setMutationShapes, takePending = takePending,
  reduceOutcomes = { inPlace = inPlace, twoPlaces = twoPlaces, anotherTable = anotherTable, pending = pending },
  stepStages = { outside = outside, handling = handling, reducing = reducing },
  -- A feature's inputs, time and random numbers (FeatureInputs.swift starts them per host):
  -- the plain `os.time()`, `os.date(fmt)` and `os.clock()` a feature host installs, and
  -- `env.now()`, `env.uuid()` and `env.random(...)`. On the virtual clock time follows the
  -- clock (`clockMs`, ms since its start) from EPOCH, 2026-01-01T00:00:00Z, and random numbers
  -- come from Lua's own generator seeded with the run's seed; on the real clock time is read
  -- live and, under `--record`, every value goes to `record(kind, value)` (the seed is recorded
  -- by Swift, in the header). A replay's `feed(kind)` hands back the recorded values first. An explicit time
  -- (`os.time(table)`, `os.date(fmt, t)`) is Lua's, as ever. Called through a table, not a
  -- local, so a bad argument still names `time` or `date`.
  -- (Last in this table, so that the lines of the code above, which tracebacks name, stay put.)
  inputs = (function()
    local lib = { time = os.time, date = os.date, clock = os.clock, random = math.random, randomseed = math.randomseed }
    local EPOCH <const> = 1767225600
    local inputs = { virtual = false }
    local function read(kind, liveValue, virtual)
      local feed, v = inputs.feed, nil
      if feed then v = feed(kind) end
      -- The virtual clock's value, or nil where none runs (a spec's own code around its stores).
      if v == nil and inputs.virtual then v = virtual() end
      if v == nil then v = liveValue() end
      local record = inputs.record
      if record then record(kind, v) end
      return v
    end
    local function liveTime() return (lib.time()) end
    local function virtualTime() local ms = inputs.clockMs(); return ms and EPOCH + ms // 1000 end
    local function liveClock() return (lib.clock()) end
    local function virtualClock() local ms = inputs.clockMs(); return ms and ms / 1000 end
    local function liveNow() return inputs.wallMs() end
    local function virtualNow() local ms = inputs.clockMs(); return ms and EPOCH * 1000 + ms end
    local controlled = {
      time = function(t)
        if t ~= nil then return (lib.time(t)) end
        return read("time", liveTime, virtualTime)
      end,
      clock = function() return read("clock", liveClock, virtualClock) end,
      -- No argument: a seed drawn from the run's generator, so a replay draws the same one.
      randomseed = function(...)
        if select("#", ...) == 0 then return lib.randomseed(lib.random(0)) end
        return lib.randomseed(...)
      end,
    }
    controlled.date = function(fmt, t)
      if t == nil then t = controlled.time() end
      return (lib.date(fmt, t))
    end
    local function uuid()
      local r = lib.random
      local a, b, c, d = r(0, 0xffffffff), r(0, 0xffffffff), r(0, 0xffffffff), r(0, 0xffffffff)
      b = (b & 0xffff0fff) | 0x4000          -- version 4
      c = (c & 0x3fffffff) | 0x80000000      -- the RFC 4122 variant
      return format("%08x-%04x-%04x-%04x-%04x%08x", a, b >> 16, b & 0xffff, c >> 16, c & 0xffff, d)
    end
    -- What every feature's `env` offers unless a test store's `env` stubs it.
    local envInputs = {
      now = function() return read("now", liveNow, virtualNow) end,
      uuid = uuid,
      random = function(...) return lib.random(...) end,
    }
    withInputs = function(env, stubs)
      for k, v in pairs(envInputs) do env[k] = v end
      if stubs then
        for k, v in pairs(stubs) do env[k] = v end
      end
      return env
    end
    -- Swift's `FeatureInputs.start`: the clock, the seed and the taps; `globals` (a trusted
    -- state's own, whose plugins share them) get the controlled functions.
    function inputs.start(virtual, seed, clockMs, wallMs, record, feed, globals)
      inputs.virtual, inputs.clockMs, inputs.wallMs, inputs.record, inputs.feed = virtual, clockMs, wallMs, record, feed
      lib.randomseed(seed)
      if globals then
        local os, math = globals.os, globals.math
        os.time, os.date, os.clock, math.randomseed = controlled.time, controlled.date, controlled.clock, controlled.randomseed
      end
    end
    function inputs.reseed(seed) lib.randomseed(seed) end
    -- A sandboxed plugin's `os` and `math` (plugin_sandbox.lua): its own tables of the
    -- controlled functions over the library's others.
    function inputs.library(name, base)
      local t = {}
      for k, v in pairs(base) do t[k] = v end
      for k in pairs(t) do
        if controlled[k] ~= nil and (name == "os" or k == "randomseed") then t[k] = controlled[k] end
      end
      return t
    end
    return inputs
  end)(),
}
