-- A monotonic wall clock in seconds for the Lua-side figures: luasystem's
-- monotime (lua-system comes with lua-busted, which scripts/setup installs),
-- else os.clock (process CPU time) with a note on stderr.
local ok, system = pcall(require, "system")
if ok and system.monotime then return system.monotime end
io.stderr:write("bench: lua-system not found; timing with os.clock (CPU time)\n")
return os.clock
