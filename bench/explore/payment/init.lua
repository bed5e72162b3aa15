-- payment (hard: a service fault at one call, after a path): paying for an order. `add` puts
-- an item in it (and unticks the terms: they are accepted for the order as it stands),
-- `address` types the delivery address, `terms` ticks or unticks the terms, `review` shows the
-- order once it has two items or more (the shop's minimum), an address and the terms ticked,
-- `confirm` pays (from the review only), `edit` goes back to editing.
-- Paying charges the card through the `bank` service (a fake bank that keeps a ledger and
-- dedupes by idempotency key); a charge that takes longer than 2 s is tried once more.
-- The bug: the retry makes a fresh idempotency key, so when the first charge was made but
-- answers late (the bank call answering after 2 s), the card is charged twice.
local mf = require "moonflow"

local PRICE = 1200       -- cents an item
local TIMEOUT_MS = 2000

-- The fake bank: one ledger per run, a charge per new key; answers the order's charged total.
local function bank()
  local ledger, seen = {}, {}
  return function(order, amount, key)
    if not seen[key] then
      seen[key] = true
      ledger[order] = (ledger[order] or 0) + amount
    end
    return mf.timer(100):map(function() return ledger[order] end)
  end
end

return mf.feature {
  name = "payment",
  initial = { items = 0, address = "", terms = false, status = "editing", charged = 0, order = 1 },
  state = {
    items = "integer",
    address = "string",
    terms = "boolean",
    status = { "enum", "editing", "review", "paying", "paid" },
    charged = "integer",   -- what the bank says it took for this order
    order = "integer",
    message = "string?",
  },
  actions = { add = {}, address = { text = "string" }, terms = { accepted = "boolean" }, review = {}, confirm = {}, edit = {} },
  mutations = {
    added = {},
    addressed = { text = "string" },
    terms = { accepted = "boolean" },
    status = { status = "string" },
    charged = { charged = "integer" },
    failed = { message = "string" },
  },
  strategy = { confirm = "exhaust" },
  services = { charge = bank() },
  invariants = {
    chargedOnce = function(s) return s.charged <= s.items * PRICE, s.charged end,
  },

  handle = function(action, state, env)
    local t = action.type
    if t == "add" or t == "address" or t == "terms" or t == "edit" then
      if state.status == "paying" or state.status == "paid" then return nil end
      if t == "add" then return { type = "added" } end
      if t == "address" then return { type = "addressed", text = action.text } end
      if t == "terms" then return { type = "terms", accepted = action.accepted } end
      return { type = "status", status = "editing" }
    elseif t == "review" then
      if state.status == "editing" and state.items >= 2 and state.address ~= "" and state.terms then
        return { type = "status", status = "review" }
      end
    elseif t == "confirm" then
      if state.status ~= "review" then return nil end
      local order, amount = state.order, state.items * PRICE
      local function attempt(key) return env.services.charge(order, amount, key):timeout(TIMEOUT_MS) end
      local key = ("order-%d"):format(order)  -- one charge per order, however often confirmed
      return attempt(key)
        :catchError(function() return attempt(("order-%d-%s"):format(order, env.uuid())) end)
        :map(function(charged) return { type = "charged", charged = charged } end)
        :startWith { type = "status", status = "paying" }
        :catchError(function(err) return mf.just { type = "failed", message = tostring(err) } end)
    end
  end,

  reduce = function(state, m)
    if m.type == "added" then
      state.items, state.terms = state.items + 1, false
    elseif m.type == "addressed" then
      state.address = m.text
    elseif m.type == "terms" then
      state.terms = m.accepted
    elseif m.type == "status" then
      state.status = m.status
    elseif m.type == "charged" then
      state.status, state.charged = "paid", m.charged
    elseif m.type == "failed" then
      state.status, state.message = "review", m.message
    end
    return state
  end,
}
