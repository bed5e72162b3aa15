-- Loads plugins/counter/init.lua outside Moonflow, so that the pure-Lua loop
-- (counter_loop.lua) and the C program (counter_capi.c) run the very same
-- handle and reduce functions as the feature does under `moonflow run`.
-- `require "moonflow"` gets a stub: mf.feature returns the definition as is.
-- Usage: local def = dofile("bench/counter_def.lua")("plugins/counter/init.lua")
return function(plugin)
  package.loaded.moonflow = {
    feature = function(def) return def end,
    timer = function(_, mutation) return mutation end,
  }
  local def = dofile(plugin)
  package.loaded.moonflow = nil
  return def
end
