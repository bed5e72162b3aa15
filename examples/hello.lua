-- A first look at the host: Lua 5.4 with `moonflow` preloaded and native
-- modules (Debian's lua-cjson) available through require.
local mf = require "moonflow"
local cjson = require "cjson"

print(("moonflow %s on %s"):format(mf.version, _VERSION))
local state = { count = 0, history = {} }
for _, step in ipairs { 1, 2, 3 } do
  state.count = state.count + step
  state.history[#state.history + 1] = state.count
end
print("state: " .. cjson.encode(state))
print("arguments: " .. table.concat(arg, " "))
