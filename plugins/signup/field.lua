-- signup.field: one form field as its own feature with its own validation
-- state (VIPER(RS): each layer has a State). `makeField(name, rule)` returns
-- an mf.feature whose reducer keeps the value, whether it is valid, and why not.
local mf = require "moonflow"

return function(name, rule)
  return mf.feature {
    name = name,
    initial = { value = "", valid = false, touched = false },
    state = { value = "string", valid = "boolean", touched = "boolean", problem = "string?" },
    actions = { change = { value = "string" } },
    mutations = { changed = { value = "string" } },

    handle = function(action)
      return { type = "changed", value = action.value }
    end,

    reduce = function(state, m)
      local problem = rule(m.value)
      state.value, state.touched = m.value, true
      state.valid, state.problem = problem == nil, problem
      return state
    end,
  }
end
