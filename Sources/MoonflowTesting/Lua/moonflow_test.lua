-- `require "moonflow.test"`: the Lua side of the test store (TestModule.swift gives it
-- `core`, the Swift half): argument checks, stubs, and failures raised at the spec's line.
-- `explorer` (explore.lua) adds T.explore, T.gen and T.faults, with `generators`
-- (generators.lua), T.gen's, and `guide` (guide.lua), guided exploration's corpus.
local core, explorer, generators, guide = ...
local mf = require "moonflow"
local T = {}

-- Raises `msg` at `level` as error() counts it from the caller of raise:
-- through busted's fail when busted runs the spec (a failure, not an error).
local function raise(msg, level)
  local ok, busted = pcall(require, "busted")
  local fail = ok and type(busted) == "table" and busted.fail
  if fail then fail(msg, level + 1) end
  error(msg, level + 1)
end

local streamMeta = getmetatable(mf.never())
local function asStream(v)
  if getmetatable(v) == streamMeta then return v end
  if v == nil then return mf.empty() end
  return mf.just(v)
end

local function callable(v)
  if type(v) == "function" then return true end
  local mt = type(v) == "table" and getmetatable(v)
  return type(mt) == "table" and mt.__call ~= nil
end

-- A stub is a function (or a callable such as a luassert spy) returning a
-- stream or a plain value, or a table of methods standing in for a repository.
local function stub(name, fn)
  if callable(fn) then
    return function(...) return asStream(fn(...)) end
  elseif type(fn) == "table" then
    local methods = {}
    for k, m in pairs(fn) do
      if not callable(m) then
        raise(("T.store: opts.services.%s.%s must be a function (got %s)"):format(name, tostring(k), type(m)), 3)
      end
      methods[k] = function(...) return asStream(m(...)) end
    end
    return setmetatable(methods, { __index = function(_, k)
      error(("the stub for service '%s' has no method '%s'; add it to opts.services.%s (a table stub replaces the whole service)"):format(name, tostring(k), name), 2)
    end })
  end
  raise(("T.store: opts.services.%s must be a function returning a stream or a value, or a table of methods (got %s)"):format(name, type(fn)), 3)
end

-- The string keys of `t`, sorted (what a did-you-mean picks from).
local function names(t)
  local out = {}
  for k in pairs(t) do if type(k) == "string" then out[#out + 1] = k end end
  table.sort(out)
  return out
end

local HANDLE = {}
local Store = {}
local StoreMeta = {
  __index = function(self, key)
    if key == "state" then
      -- Strict as the plugin's own view: a field the declared state lacks is a mistake
      -- (`store.state.itmes`), named with what it may have meant; a declared one that is
      -- nil now reads nil.
      local h = rawget(self, HANDLE)
      local state = core.state(h)
      if type(state) == "table" and core.strictState(h) then
        setmetatable(state, { __index = function(_, k)
          local msg = core.unknownField(h, k)
          if msg then error(msg, 2) end
        end })
      end
      return state
    end
    if key == "now" then return core.now(rawget(self, HANDLE)) end
    if key == "inFlight" then return core.exploreInFlight(rawget(self, HANDLE)) end
    if key == "logs" then return core.logs(rawget(self, HANDLE)) end
    local method = Store[key]
    if method == nil and type(key) == "string" then
      error(("the test store has no '%s' (%s)"):format(key, core.nearest(key, names(Store))), 2)
    end
    return method
  end,
  __newindex = function(_, key)
    error(("store.%s is read-only: change the state by sending an action"):format(tostring(key)), 2)
  end,
  __tostring = function() return "moonflow.test store" end,
}

local function handle(self, method)
  local h = type(self) == "table" and rawget(self, HANDLE)
  if not h then raise(("store:%s(...) must be called with a colon (store:%s, not store.%s)"):format(method, method, method), 3) end
  return h
end

local function checkChange(change, method)
  if change ~= nil and type(change) ~= "function" then
    raise(("store:%s: the change must be a function(state) that applies the expected change (got %s)"):format(method, type(change)), 3)
  end
end

-- Completes a send or receive step: applies `change` to the base state and compares.
local function complete(h, ok, base, change)
  if not ok then raise(base, 3) end
  local expected
  if change ~= nil then
    expected = base
    local replaced = change(expected)
    if replaced ~= nil then expected = replaced end
  end
  local good, msg = core.complete(h, expected)
  if not good then raise(msg, 3) end
end

-- A send or a receive: checks the arguments, takes the step, then completes it.
-- The methods tail-call it, so their frame is gone: level 2 from here, and level 3
-- from the helpers it calls, is the spec's line.
local function step(self, method, what, value, example, change)
  local h = handle(self, method)
  if type(value) ~= "table" then
    raise(("store:%s(%s [, change]): %s must be a table like %s (got %s)"):format(method, what, what, example, type(value)), 2)
  end
  checkChange(change, method)
  local ok, base = core[method](h, value)
  complete(h, ok, base, change)
end

function Store:send(action, change) return step(self, "send", "action", action, '{ type = "increment" }', change) end
-- `store:receive("loaded" [, fields] [, change])`: the mutation matched by its type, and by
-- the fields given (a partial table: the others are not compared).
local function receiveByType(self, name, fields, change)
  local h = handle(self, "receive")
  if type(fields) == "function" and change == nil then fields, change = nil, fields end
  if fields ~= nil and type(fields) ~= "table" then
    raise(("store:receive(type [, fields] [, change]): fields must be a table of the fields to compare, like { n = 1 } (got %s)"):format(type(fields)), 2)
  end
  checkChange(change, "receive")
  local pattern = {}
  for k, v in pairs(fields or {}) do pattern[k] = v end
  if pattern.type ~= nil and pattern.type ~= name then
    raise(("store:receive(%q, fields): fields.type is %s; leave it out (the first argument is the type)"):format(name, tostring(pattern.type)), 2)
  end
  pattern.type = name
  local ok, base = core.receive(h, pattern, true)
  complete(h, ok, base, change)
end

function Store:receive(mutation, fields, change)
  if type(mutation) == "string" then return receiveByType(self, mutation, fields, change) end
  -- A whole mutation: the second argument is the change.
  return step(self, "receive", "mutation", mutation, '{ type = "add", n = 1 } (or its type, "add")', fields)
end

-- A send the feature must refuse (an undeclared action, a field of the wrong type):
-- its error contains `text`, and nothing happens to the state.
function Store:sendRefused(action, text)
  local h = handle(self, "sendRefused")
  if type(action) ~= "table" or type(text) ~= "string" then
    raise(("store:sendRefused(action, text): action must be a table and text a string the error contains (got %s, %s)"):format(type(action), type(text)), 2)
  end
  local ok, err = core.send(h, action)
  if ok then
    raise("store:sendRefused: the store took the action; it was expected to refuse it with an error containing " .. ("%q"):format(text), 2)
  end
  if not tostring(err):find(text, 1, true) then
    raise(("store:sendRefused: the action was refused, but with\n  %s\nnot with an error containing\n  %s"):format(tostring(err), text), 2)
  end
end

function Store:receiveEffect(effect, from)
  local h = handle(self, "receiveEffect")
  if type(effect) ~= "table" then
    raise(("store:receiveEffect(effect [, from]): effect must be a table with a type (got %s)"):format(type(effect)), 2)
  end
  if from ~= nil and type(from) ~= "string" then
    raise(("store:receiveEffect(effect [, from]): from must be the child's name (got %s)"):format(type(from)), 2)
  end
  local ok, msg = core.receiveEffect(h, effect, from)
  if not ok then raise(msg, 2) end
end

function Store:receiveError(text)
  local h = handle(self, "receiveError")
  if type(text) ~= "string" then
    raise(("store:receiveError(text): text must be a string the error message contains (got %s)"):format(type(text)), 2)
  end
  local ok, msg = core.receiveError(h, text)
  if not ok then raise(msg, 2) end
end

function Store:advance(ms)
  local h = handle(self, "advance")
  if math.type(ms) ~= "integer" then
    raise(("store:advance(ms): ms must be a whole number of milliseconds (got %s)"):format(math.type(ms) or type(ms)), 2)
  end
  local ok, msg = core.advance(h, ms)
  if not ok then raise(msg, 2) end
end

function Store:finish()
  local h = handle(self, "finish")
  local ok, msg = core.finish(h)
  if not ok then raise(msg, 2) end
end

-- Every invariant of the feature's definition (and of `extra`, a table of name = function(state))
-- must hold for the current state: a function that returns false or raises fails the spec here.
function Store:checkInvariants(extra)
  local h = handle(self, "checkInvariants")
  if extra ~= nil and type(extra) ~= "table" then
    raise(("store:checkInvariants([invariants]): give a table of name = function(state) (got %s)"):format(type(extra)), 2)
  end
  local def = core.definition(h)
  local broken = explorer.broken(def and def.invariants, extra, core.state(h))
  if broken then raise(broken, 2) end
end

function Store:skipReceived() core.skipReceived(handle(self, "skipReceived")) end
function Store:skipInFlight() core.skipInFlight(handle(self, "skipInFlight")) end

local options = { services = true, state = true, exhaustive = true, env = true, seed = true }
-- The dependencies a feature's `env` offers that a store may stub (opts.env).
local dependencies = { now = true, uuid = true, random = true }

function T.store(target, opts)
  if type(target) ~= "string" and type(target) ~= "table" then
    raise(("T.store(pluginOrFeature [, opts]): give a plugin name or an mf.feature{...} table (got %s)"):format(type(target)), 2)
  end
  if opts ~= nil and type(opts) ~= "table" then
    raise(("T.store: opts must be a table { services = ..., state = ..., exhaustive = ... } (got %s)"):format(type(opts)), 2)
  end
  opts = opts or {}
  for k in pairs(opts) do
    if not options[k] then
      raise(("T.store: unknown option '%s'; the options are services, state, exhaustive, env and seed"):format(tostring(k)), 2)
    end
  end
  local stubs, compiled, file
  if opts.services ~= nil then
    if type(opts.services) ~= "table" then
      raise(("T.store: opts.services must be a table of functions by service name (got %s)"):format(type(opts.services)), 2)
    end
    -- T.faults of this plugin: the faults wrap the services of the store's own load.
    compiled, file, stubs = explorer.storeServices(target, opts.services)
    if not compiled then
      stubs = {}
      for name, fn in pairs(opts.services) do stubs[name] = stub(name, fn) end
    end
  end
  local env
  if opts.env ~= nil then
    if type(opts.env) ~= "table" then
      raise(("T.store: opts.env must be a table of functions by name: now, uuid or random (got %s)"):format(type(opts.env)), 2)
    end
    env = {}
    for name, fn in pairs(opts.env) do
      if not dependencies[name] then
        raise(("T.store: opts.env.%s is not a dependency of env; stub now, uuid or random"):format(tostring(name)), 2)
      end
      if not callable(fn) then
        raise(("T.store: opts.env.%s must be a function (got %s)"):format(name, type(fn)), 2)
      end
      env[name] = fn
    end
  end
  if opts.seed ~= nil and math.type(opts.seed) ~= "integer" then
    raise(("T.store: opts.seed must be a whole number (got %s)"):format(tostring(opts.seed)), 2)
  end
  local source = file
  if type(target) == "table" and debug and debug.getinfo then
    local info = debug.getinfo(2, "Sl")
    if info then source = info.short_src .. ":" .. tostring(info.currentline) end
  end
  local h, err = core.new(compiled or target, stubs, opts.state, opts.exhaustive ~= false, source, nil, env, opts.seed)
  if not h then raise(err, 2) end
  return setmetatable({ [HANDLE] = h }, StoreMeta)
end

explorer = explorer(T, core, { raise = raise, stub = stub, asStream = asStream, callable = callable }, generators, guide)

-- `T.load(...)` for `T.store(...)` fails at its line naming the function meant, not
-- as "attempt to call a nil value (field 'load')".
return setmetatable(T, { __index = function(_, k)
  error(("moonflow.test has no '%s' (%s)"):format(tostring(k), core.nearest(tostring(k), names(T))), 2)
end })
