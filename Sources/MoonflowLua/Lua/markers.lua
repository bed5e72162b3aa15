-- `mf.array([t])` and `mf.object([t])` (MoonflowModule.swift runs this once per Lua state
-- with an empty JSON array, the dispatch's `mark` and its `viewTarget`): each marks a table
-- (a new one without `t`) to encode as `[]` or `{}` when it is empty, whatever it was
-- before. The markers are the dispatch's, kept from scripts by `__metatable`: getmetatable
-- gives "moonflow.array" or "moonflow.object" for a marked table.
local setmark, viewTarget = select(2, ...)
local getmetatable, type, error = getmetatable, type, error
local function mark(name, t)
  if t == nil then t = {} end
  if type(t) ~= "table" then
    error("bad argument #1 to '" .. name .. "' (table expected, got " .. type(t) .. ")", 3)
  end
  local old = getmetatable(viewTarget(t))
  if old ~= nil and old ~= "moonflow.array" and old ~= "moonflow.object" then
    error(name .. ": the table has a metatable of its own; state tables are plain data", 3)
  end
  return setmark(t, name)
end
return function(t) local r = mark("array", t) return r end,
  function(t) local r = mark("object", t) return r end
