-- `mf.array([t])` and `mf.object([t])` (MoonflowModule.swift runs this once per Lua state
-- with an empty JSON array, whose metatable is the array marker, the dispatch's `mark` and
-- its `viewTarget`): each marks a table (a new one without `t`) to encode as `[]` or `{}`
-- when it is empty, whatever it was before.
local arrayMT, setmark, viewTarget = getmetatable((...)), select(2, ...)
local getmetatable, type, error = getmetatable, type, error
local objectMT = { __name = "moonflow.object" }
local function mark(name, mt, t)
  if t == nil then t = {} end
  if type(t) ~= "table" then
    error("bad argument #1 to '" .. name .. "' (table expected, got " .. type(t) .. ")", 3)
  end
  local old = getmetatable(viewTarget(t))
  if old ~= nil and old ~= arrayMT and old ~= objectMT then
    error(name .. ": the table has a metatable of its own; state tables are plain data", 3)
  end
  return setmark(t, mt)
end
return function(t) local r = mark("array", arrayMT, t) return r end,
  function(t) local r = mark("object", objectMT, t) return r end
