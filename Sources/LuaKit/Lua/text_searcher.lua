-- The text-only module searchers: a module's file or text loads as text only, so a
-- precompiled chunk is never run.
--   Run with no argument (LuaState installs it unless a trusted state behaves as the
--   standalone lua5.4): Lua's own file searcher, except for that, in package.searchers[2].
--   Run with `find` (a host's plugin sources; `find(name)` gives the module's text and
--   where it is, or nil and why not): a searcher that asks it, right after the file one, so
--   modules on package.path (the host's search paths) come first.
local find = ...
local package, searchpath, loadfile, load, type, error = package, package.searchpath, loadfile, load, type, error

-- Raises the message Lua's own searchers give for a module that does not compile.
local function failed(name, from, err)
  error(("error loading module '%s' from %s:\n\t%s"):format(name, from, err), 0)
end

if find == nil then
  package.searchers[2] = function(name)
    local path = package.path
    if type(path) ~= "string" and type(path) ~= "number" then error("'package.path' must be a string", 0) end
    local file, err = searchpath(name, path)
    if not file then return err end
    local chunk, lerr = loadfile(file, "t")
    if not chunk then failed(name, "file '" .. file .. "'", lerr) end
    return chunk, file
  end
else
  table.insert(package.searchers, 3, function(name)
    local text, where = find(name)
    if not text then return "\n\t" .. where end
    local chunk, err = load(text, "@" .. where, "t")
    if not chunk then failed(name, "'" .. where .. "'", err) end
    return chunk, where
  end)
end
