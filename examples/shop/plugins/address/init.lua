-- address: where the order goes. `set` changes the fields it names.
local mf = require "moonflow"

return mf.feature {
  name = "address",
  state = { name = "string", street = "string", city = "string" },
  initial = { name = "", street = "", city = "" },
  actions = { set = { name = "string?", street = "string?", city = "string?" } },
  mutations = { changed = { name = "string?", street = "string?", city = "string?" } },

  handle = function(action)
    return { type = "changed", name = action.name, street = action.street, city = action.city }
  end,

  reduce = function(state, m)
    state.name = m.name or state.name
    state.street = m.street or state.street
    state.city = m.city or state.city
    return state
  end,
}
