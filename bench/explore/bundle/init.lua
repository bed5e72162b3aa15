-- bundle (hard: a narrow value with a service fault): a cart line with tiered prices. `qty`
-- sets the quantity (0 to 20), `member` turns the member price on or off, `note` types a note
-- for the order, `gift` asks for gift wrapping, `clear` empties the line. The `quote` service (a fake backend, 100 ms)
-- prices the line; when it fails, the screen prices the line itself (`localPrice`).
-- Tiers: 300 cents each; members pay 250 from 7 up (a bundle), 200 from 13 up.
-- The bug: the fallback starts the members' bundle at `qty > 7`, so a member's quantity of
-- exactly 7 priced while the service is down costs 300 each.
local mf = require "moonflow"

local function price(qty, member)
  local each = 300
  if member and qty >= 13 then each = 200 elseif member and qty >= 7 then each = 250 end
  return qty * each
end

local function localPrice(qty, member)
  local each = 300
  if member and qty >= 13 then each = 200 elseif member and qty > 7 then each = 250 end
  return qty * each
end

local function quote(qty, member)
  return mf.timer(100):map(function() return price(qty, member) end)
end

return mf.feature {
  name = "bundle",
  initial = { qty = 0, member = false, total = 0, pricing = false, note = "", gift = false },
  state = { qty = "integer", member = "boolean", total = "integer", pricing = "boolean", note = "string", gift = "boolean", message = "string?" },
  actions = { qty = { n = "integer" }, member = { on = "boolean" }, note = { text = "string" }, gift = { wrap = "boolean" }, clear = {} },
  mutations = {
    changed = { qty = "integer", member = "boolean" },
    priced = { qty = "integer", member = "boolean", total = "integer" },
    noted = { text = "string" },
    wrapped = { wrap = "boolean" },
    refused = { message = "string" },
  },
  strategy = { qty = "latest", member = "latest", clear = "latest" },
  services = { quote = quote },
  invariants = {
    pricedByTier = function(s)
      if not s.pricing then return s.total == price(s.qty, s.member), s.total end
    end,
  },

  handle = function(action, state, env)
    local qty, member = state.qty, state.member
    if action.type == "qty" then
      if action.n < 0 or action.n > 20 then return { type = "refused", message = "a quantity is 0 to 20" } end
      qty = action.n
    elseif action.type == "member" then
      member = action.on
    elseif action.type == "clear" then
      qty = 0
    elseif action.type == "note" then
      return { type = "noted", text = action.text }
    elseif action.type == "gift" then
      return { type = "wrapped", wrap = action.wrap }
    end
    return env.services.quote(qty, member)
      :map(function(total) return { type = "priced", qty = qty, member = member, total = total } end)
      :catchError(function()
        return mf.just { type = "priced", qty = qty, member = member, total = localPrice(qty, member) }
      end)
      :startWith { type = "changed", qty = qty, member = member }
  end,

  reduce = function(state, m)
    if m.type == "changed" then
      state.qty, state.member, state.pricing, state.message = m.qty, m.member, true, nil
    elseif m.type == "priced" then
      if m.qty == state.qty and m.member == state.member then state.total, state.pricing = m.total, false end
    elseif m.type == "noted" then
      state.note = m.text
    elseif m.type == "wrapped" then
      state.gift = m.wrap
    elseif m.type == "refused" then
      state.message = m.message
    end
    return state
  end,
}
