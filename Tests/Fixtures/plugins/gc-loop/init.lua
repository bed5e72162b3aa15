-- A plugin whose dropped object has a __gc that loops, with the collector tuned to
-- run whole cycles at every allocation. Tests put string constants where the
-- padding comment is, to give the parser of a reload work enough to reach it.
local mf = require "moonflow"
collectgarbage("incremental", 1, 1000, 10)
_G.KEEP = setmetatable({}, { __gc = function() while true do end end })
local function pad() return { --[[padding]] } end  -- luacheck: ignore 211 (only padding: never called)
return mf.feature {
  name = "gc", initial = { n = 0 }, actions = { drop = {}, bump = {} }, mutations = { bump = {} },
  handle = function(a)
    if a.type == "drop" then _G.KEEP = nil return end
    return { type = "bump" }
  end,
  reduce = function(s) s.n = s.n + 1 return s end,
}
