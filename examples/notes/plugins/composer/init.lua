-- The note being written: a text field and a submit button.
local mf = require "moonflow"

return mf.feature {
  name = "composer",
  initial = { draft = "" },
  state = { draft = "string" },
  -- The submitted note goes out to the app, which adds it to the list.
  outputs = { submitted = { text = "string" } },
  actions = { write = { text = "string" }, submit = {} },
  mutations = { draft = { text = "string" }, submitted = {} },

  handle = function(action, state)
    if action.type == "write" then return { type = "draft", text = action.text } end
    if state.draft == "" then error("nothing to submit: write a note first") end
    return { type = "submitted" }
  end,

  reduce = function(state, m)
    if m.type == "draft" then
      state.draft = m.text
      return state
    end
    -- The note goes out as an effect (the app adds it to the list); the field empties.
    local text = state.draft
    state.draft = ""
    return state, { type = "submitted", text = text }
  end,
}
