-- The one definition of the sandbox: what a sandboxed script may reach. LuaState
-- runs it once per Lua state and keeps what it returns. The sandboxed profile
-- applies it to the state's own globals (`sandboxState`); the feature host builds
-- each sandboxed plugin's globals from it (`globals`).
--
-- Everything the sandbox itself calls is taken now, before any script runs, and
-- called as a local: never as a method through a table a script can reach.
local G = _G
local load0, loadfile0, setmetatable0, getmetatable0, rawset0, rawget0, error0 =
  load, loadfile, setmetatable, getmetatable, rawset, rawget, error
local type, tostring, next, select, ipairs = type, tostring, next, select, ipairs
local collectgarbage0 = collectgarbage
local match, find, gsub, format, concat = string.match, string.find, string.gsub, string.format, table.concat

-- A read-only table is an empty proxy; no route hands out the table behind it:
-- pairs walks it through a closure, getmetatable answers false, rawset refuses.
local frozen = setmetatable0({}, { __mode = "k" })
local function freeze(name, t)
  local function walk(_, k) return next(t, k) end
  local proxy = setmetatable0({}, {
    __index = t,
    __newindex = function(_, k) error0(format("attempt to modify read-only table %s (field %s)", name, tostring(k)), 2) end,
    __pairs = function(self) return walk, self, nil end,
    __len = function() return #t end,
    __metatable = false,
  })
  frozen[proxy] = true
  return proxy
end

-- The libraries a sandboxed script sees, read-only; `os` only tells the time.
local libraries = {}
for _, name in ipairs { "string", "table", "math", "utf8", "coroutine" } do libraries[name] = freeze(name, G[name]) end
libraries.os = freeze("os", { clock = os.clock, date = os.date, difftime = os.difftime, time = os.time })

-- The base functions a sandboxed script keeps as they are.
local plain = { "assert", "error", "ipairs", "next", "pairs", "pcall", "rawequal", "rawget", "rawlen",
                "select", "tonumber", "tostring", "type", "xpcall", "warn", "print" }

-- What `collectgarbage` may do in the sandbox: look, and help. The collector is the
-- state's, shared by every plugin in it, so stopping it or changing its mode or pace
-- would starve a sibling ("not enough memory").
local gcAllowed = { collect = true, count = true, step = true, isrunning = true }

-- The base functions a sandboxed script gets guarded, for globals `env` (which
-- `what` names in messages): text chunks only, no `__gc`, no metatable on the
-- globals, none of the strings' metatable, no raw write into a read-only table.
local function guards(env, what)
  return {
    load = function(chunk, name, mode, ...)
      if mode ~= nil and mode ~= "t" then error0("load: binary chunks are refused in the sandbox (use mode 't')", 2) end
      if select("#", ...) > 0 then return load0(chunk, name, "t", ...) end
      if env ~= G then return load0(chunk, name, "t", env) end
      return load0(chunk, name, "t")
    end,
    setmetatable = function(t, mt)
      if t == env then error0(format("setmetatable: %s cannot get a metatable", what), 2) end
      if type(mt) == "table" and rawget0(mt, "__gc") ~= nil then
        error0("setmetatable: __gc metamethods are refused in the sandbox", 2)
      end
      return setmetatable0(t, mt)
    end,
    -- Strings share one metatable, whose __index is the state's own string table.
    getmetatable = function(v)
      if type(v) == "string" then return false end
      return getmetatable0(v)
    end,
    rawset = function(t, k, v)
      if frozen[t] then error0(format("rawset: %s is read-only in the sandbox", tostring(k)), 2) end
      return rawset0(t, k, v)
    end,
    collectgarbage = function(opt, ...)
      if opt == nil or gcAllowed[opt] then return collectgarbage0(opt, ...) end
      error0(format("collectgarbage(%q) is refused in the sandbox: the collector is shared with the other plugins; "
        .. "use 'count', 'step', 'collect' or 'isrunning'", tostring(opt)), 2)
    end,
  }
end

local sandbox = { freeze = freeze }

-- Fresh globals for one sandboxed script: the plain functions, the read-only
-- libraries and the guards. No require: the host adds its own.
function sandbox.globals(what)
  local env = {}
  for _, k in ipairs(plain) do env[k] = G[k] end
  for k, v in next, libraries do env[k] = v end
  for k, v in next, guards(env, what) do env[k] = v end
  env._VERSION = G._VERSION
  env._G = env
  return env
end

-- The sandboxed profile: the state's own globals lose the rest of the library,
-- and `require` finds what the host preloads (read-only, as the libraries: every
-- script of the state shares it) and NAME.lua or NAME/init.lua under one folder
-- the host chooses (package.path plays no part). Returns the setter of that folder.
function sandbox.sandboxState()
  for k, v in next, libraries do G[k] = v; package.loaded[k] = v end
  for k, v in next, guards(G, "the sandbox's globals") do G[k] = v end
  G.io, G.debug, G.dofile, G.loadfile = nil, nil, nil, nil
  package.loaded.io, package.loaded.debug = nil, nil
  package.loadlib, package.searchpath = nil, nil
  package.path, package.cpath = "", ""  -- kept as strings for hosts that add to them; no searcher reads them
  local root, preload = ".", package.preload
  -- Lua's preload searcher, but a table the host's loader returns is what require keeps
  -- and hands out read-only.
  local function preloaded(name)
    local loader = preload[name]
    if loader == nil then return format("no field package.preload['%s']", name) end
    return function(...)
      local value = loader(...)
      if type(value) == "table" then value = freeze(name, value) end
      return value
    end, ":preload:"
  end
  package.searchers = { preloaded, function(name)
    if not match(name, "^[%w_]+[%w_.]*$") or find(name, "..", 1, true) or match(name, "%.$") then
      return format("no module %s in the sandbox (a module name is letters, digits, _ and dots)", name)
    end
    local base, tried = root .. "/" .. gsub(name, "%.", "/"), {}
    for _, file in ipairs { base .. ".lua", base .. "/init.lua" } do
      local chunk, err = loadfile0(file, "t")
      if chunk then return chunk, file end
      if not find(err, "^cannot open") then
        error0(format("error loading module '%s' from file '%s':\n\t%s", name, file, err), 2)
      end
      tried[#tried + 1] = format("no file '%s'", file)
    end
    return concat(tried, "\n\t")
  end }
  return function(folder) root = folder end
end

return sandbox
