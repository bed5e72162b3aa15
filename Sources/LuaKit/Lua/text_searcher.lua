-- The text-only module searcher (LuaState installs it unless a trusted state
-- behaves as the standalone lua5.4): Lua's own file searcher, except that a
-- module file loads as text only, so a precompiled chunk is never run.
local package, searchpath, loadfile, type, error = package, package.searchpath, loadfile, type, error
package.searchers[2] = function(name)
  local path = package.path
  if type(path) ~= "string" and type(path) ~= "number" then error("'package.path' must be a string", 0) end
  local file, err = searchpath(name, path)
  if not file then return err end
  local chunk, lerr = loadfile(file, "t")
  if not chunk then error(("error loading module '%s' from file '%s':\n\t%s"):format(name, file, lerr), 0) end
  return chunk, file
end
