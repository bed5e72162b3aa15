-- Writes the luacheck configuration of `moonflow check` and `moonflow test` (PluginLint.swift
-- runs this in the Lua state of a host made as the command makes its own). Its arguments are
-- the real globals tables: the one a plugin's files run with (its own under the sandbox) and
-- the one a spec file runs with. So what luacheck knows is what the plugin has, and a global
-- the sandbox removes (`io`, `os.execute`) is flagged there without a list kept by hand.
local pluginGlobals, specGlobals = ...
local pairs, ipairs, type, sort, concat, format = pairs, ipairs, type, table.sort, table.concat, string.format

local function isName(key) return type(key) == "string" and key:match("^[%a_][%w_]*$") ~= nil end

local function sortedNames(t)
  local names = {}
  for k in pairs(t) do -- pairs: a read-only library is a proxy that lists its fields through __pairs
    if isName(k) then names[#names + 1] = k end
  end
  sort(names)
  return names
end

-- One global as a luacheck definition: a library lists its fields (read-only; a field that is
-- itself a table, such as package.loaded, may hold anything, and a file handle, io.stdout,
-- has methods); anything else is a plain name.
local function definition(globals, value)
  if type(value) ~= "table" then return "{}" end
  if value == globals then return "{ other_fields = true, read_only = false }" end
  local fields = {}
  for _, name in ipairs(sortedNames(value)) do
    local kind = type(value[name])
    local inner = kind == "table" and "{ other_fields = true, read_only = false }"
      or kind == "userdata" and "{ other_fields = true }" or "{}"
    fields[#fields + 1] = format("%s = %s", name, inner)
  end
  return "{ fields = { " .. concat(fields, ", ") .. " } }"
end

-- A luacheck standard: every global, read-only, so a plugin that sets one is told; `extra`
-- names what the file gets that the globals table does not hold yet (a spec's `arg`, which
-- the spec driver sets as busted does, as it starts the file).
local function standard(globals, extra)
  local lines = {}
  for _, name in ipairs(extra or {}) do lines[#lines + 1] = format("    %s = { other_fields = true },", name) end
  for _, name in ipairs(sortedNames(globals)) do
    lines[#lines + 1] = format("    %s = %s,", name, definition(globals, globals[name]))
  end
  return "{\n  read_globals = {\n" .. concat(lines, "\n") .. "\n  },\n}"
end

return concat({
  "-- Made by moonflow for luacheck: the globals of a plugin's files and of its spec files.",
  "stds.moonflow_plugin = " .. standard(pluginGlobals),
  "stds.moonflow_spec = " .. standard(specGlobals, { "arg" }),
  "std = \"moonflow_plugin\"",
  -- Formatting (line length, whitespace) is left to editors: check reports what can be wrong.
  "ignore = { \"6\" }",
  "",
}, "\n")
