-- The notes screen: the composer and the list side by side.
local mf = require "moonflow"

return mf.compose {
  name = "notes",
  -- What `combine` makes of the children's states.
  state = { draft = "string", shown = { "list", of = "string" }, count = "integer" },
  children = { composer = "composer", list = "list" },
  route = function(action)
    if action.type == "write" or action.type == "submit" then return "composer", action end
    return "list", action
  end,
  combine = function(states)
    return { draft = states.composer.draft, shown = states.list.shown, count = #states.list.notes }
  end,
}
