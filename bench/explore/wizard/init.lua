-- wizard (hard: 8+ specific steps): a plan configurator in eight steps. `choose` picks an
-- option for the step shown, `next` goes on once the step has one, `back` returns a step
-- (choices are kept), `restart` starts over. The total is kept as choices change.
-- The bug: the last step (extras) adds its option's price without taking off the one it
-- replaces, so choosing twice there counts both: 16 steps in order, restart never between.
local mf = require "moonflow"

local STEPS = { "plan", "seats", "storage", "support", "region", "backup", "domain", "extras" }
local PRICE = { basic = 0, plus = 500, pro = 1500 }  -- cents

local function sum(choices)
  local total = 0
  for _, option in pairs(choices) do total = total + PRICE[option] end
  return total
end

return mf.feature {
  name = "wizard",
  initial = { step = "plan", choices = mf.object(), total = 0 },
  state = {
    step = { "enum", table.unpack(STEPS) },
    choices = { "map", of = { "enum", "basic", "plus", "pro" } },  -- by step name
    total = "integer",
  },
  actions = { choose = { option = { "enum", "basic", "plus", "pro" } }, next = {}, back = {}, restart = {} },
  mutations = {
    chosen = { step = "string", option = "string" },
    moved = { step = "string" },
    restarted = {},
  },
  invariants = {
    totalAddsUp = function(s) return s.total == sum(s.choices), s.total end,
  },

  handle = function(action, state)
    local at
    for i, name in ipairs(STEPS) do if name == state.step then at = i end end
    if action.type == "choose" then
      return { type = "chosen", step = state.step, option = action.option }
    elseif action.type == "next" then
      if state.choices[state.step] and at < #STEPS then return { type = "moved", step = STEPS[at + 1] } end
    elseif action.type == "back" then
      if at > 1 then return { type = "moved", step = STEPS[at - 1] } end
    elseif action.type == "restart" then
      return { type = "restarted" }
    end
  end,

  reduce = function(state, m)
    if m.type == "chosen" then
      local old = state.choices[m.step]
      if m.step == "extras" then
        state.total = state.total + PRICE[m.option]
      else
        state.total = state.total - (old and PRICE[old] or 0) + PRICE[m.option]
      end
      state.choices[m.step] = m.option
    elseif m.type == "moved" then
      state.step = m.step
    elseif m.type == "restarted" then
      state.step, state.choices, state.total = "plan", mf.object(), 0
    end
    return state
  end,
}
