-- Each sandboxed plugin's globals (PluginSandbox.swift runs this once per Lua
-- state): the sandbox's globals (LuaKit's sandbox.lua, the one definition of what
-- a sandboxed script may reach) plus a require confined to the plugin's folder, with
-- the host's controlled time and seed in `os` and `math` (dispatch.lua's `inputs`).
local sandbox, loadModule, inputs = ...
-- Taken now and called as locals, never through a table a plugin can reach.
local require0, preload, error0, type = require, package.preload, error, type
local match, find, sub, gsub, format = string.match, string.find, string.sub, string.gsub, string.format
local freeze, globals = sandbox.freeze, sandbox.globals

return function(pluginName, root)
  -- The host's print as the plugin loads (hosts route print into their events
  -- before loading), itself, so a log event's `where` is the plugin's line.
  local env = globals("a sandboxed plugin's globals")
  if inputs then
    env.os = freeze("os", inputs.library("os", env.os))
    env.math = freeze("math", inputs.library("math", env.math))
  end
  local loaded = {}
  env.require = function(name)
    if type(name) ~= "string" then
      error0(format("bad argument #1 to 'require' (string expected, got %s)", type(name)), 2)
    end
    local done = loaded[name]
    if done ~= nil then return done end
    if preload[name] then
      -- Each plugin gets its own read-only view of a host module (`moonflow`).
      local value = require0(name)
      if type(value) == "table" then value = freeze(name, value) end
      loaded[name] = value
      return value
    end
    local prefix, rest = match(name, "^([%w_]+)%.([%w_.]+)$")
    if prefix ~= pluginName or find(rest, "..", 1, true) or sub(rest, -1) == "." then
      error0(format("module '%s' not found: a sandboxed plugin can require only its own modules ('%s.NAME') and what the host provides ('moonflow')", name, pluginName), 2)
    end
    local path = root .. "/" .. (gsub(name, "%.", "/")) .. ".lua"
    local chunk, err = loadModule(path, env, root .. "/" .. pluginName)
    if not chunk then error0(format("module '%s' not found: %s", name, err), 2) end
    local value = chunk(name, path)
    if value == nil then value = true end
    loaded[name] = value
    return value
  end
  return env
end
