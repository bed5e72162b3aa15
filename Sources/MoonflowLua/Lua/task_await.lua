-- `t:await(stream)` of a task (LuaTask.swift): records the stream through the Swift
-- `t:_await`, then yields from Lua code, so the task's coroutine waits for the stream.
local yield = coroutine.yield
return function(t, stream)
  t:_await(stream)
  return yield()
end
