-- The per-plugin sandbox (PluginSandbox.swift runs it once per Lua state): each plugin
-- gets globals of its own, read-only library tables and a require confined to its folder.
local loadModule = ...
local G = _G
-- Everything the sandbox itself calls is taken now, before any plugin runs, and
-- called as a local: never as a method through a table a plugin can reach.
local load0, setmetatable0, getmetatable0, rawset0, rawget0, error0 = load, setmetatable, getmetatable, rawset, rawget, error
local type, tostring, next, select, pairs, ipairs = type, tostring, next, select, pairs, ipairs
local match, find, gsub, sub, format = string.match, string.find, string.gsub, string.sub, string.format

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

local shared = {}
for _, name in ipairs { "string", "table", "math", "utf8", "coroutine" } do shared[name] = freeze(name, G[name]) end
shared.os = freeze("os", { clock = os.clock, date = os.date, difftime = os.difftime, time = os.time })
local plain = { "assert", "error", "ipairs", "next", "pairs", "pcall", "rawequal", "rawget", "rawlen",
                "select", "tonumber", "tostring", "type", "xpcall", "warn", "collectgarbage" }

return function(pluginName, root)
  local env = {}
  for _, k in ipairs(plain) do env[k] = G[k] end
  for k, v in pairs(shared) do env[k] = v end
  env._VERSION = _VERSION
  env._G = env
  -- The host's print as the plugin loads (hosts route print into their
  -- events before loading), itself, so a log event's `where` is the plugin's line.
  env.print = G.print
  -- Strings share one metatable, whose __index is the host's own string table:
  -- a plugin sees none, whatever the Lua state's profile.
  env.getmetatable = function(v)
    if type(v) == "string" then return false end
    return getmetatable0(v)
  end
  env.setmetatable = function(t, mt)
    if t == env then error0("setmetatable: a sandboxed plugin's globals cannot get a metatable", 2) end
    if type(mt) == "table" and rawget0(mt, "__gc") ~= nil then
      error0("setmetatable: __gc metamethods are refused in the sandbox", 2)
    end
    return setmetatable0(t, mt)
  end
  env.rawset = function(t, k, v)
    if frozen[t] then error0(format("rawset: %s is read-only in the sandbox", tostring(k)), 2) end
    return rawset0(t, k, v)
  end
  env.load = function(chunk, name, mode, e)
    if mode ~= nil and mode ~= "t" then error0("load: binary chunks are refused in the sandbox (use mode 't')", 2) end
    if e == nil then e = env end
    return load0(chunk, name, "t", e)
  end
  local loaded = {}
  env.require = function(name)
    if type(name) ~= "string" then
      error0(format("bad argument #1 to 'require' (string expected, got %s)", type(name)), 2)
    end
    local done = loaded[name]
    if done ~= nil then return done end
    if G.package.preload[name] then
      -- Each plugin gets its own read-only view of a host module (`moonflow`).
      local value = G.require(name)
      if type(value) == "table" then value = freeze(name, value) end
      loaded[name] = value
      return value
    end
    local prefix, rest = match(name, "^([%w_]+)%.([%w_.]+)$")
    if prefix ~= pluginName or find(rest, "..", 1, true) or sub(rest, -1) == "." then
      error0(format("module '%s' not found: a sandboxed plugin can require only its own modules ('%s.NAME') and what the host provides ('moonflow')", name, pluginName), 2)
    end
    local path = root .. "/" .. (gsub(name, "%.", "/")) .. ".lua"
    local chunk, err = loadModule(path, env)
    if not chunk then error0(format("module '%s' not found: %s", name, err), 2) end
    local value = chunk(name, path)
    if value == nil then value = true end
    loaded[name] = value
    return value
  end
  return env
end
