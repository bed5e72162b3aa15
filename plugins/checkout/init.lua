-- checkout: a checkout screen as a new user wrote it in the second week's trial.
-- Cart lines (`add`, `drop`); a promo code checked by a service once typing
-- pauses (debounce, `latest` cancels a stale check); a payment with a timeout
-- and one retry (`:timeout`, `:retry`), `exhaust` so a double tap pays once; an
-- error banner until dismissed or the next try; and a draft of the cart kept
-- in SQLite (`repositories`), saved after every change by an internal effect
-- and restored by `load`. A paid order goes out to the app as `receipt`.
local mf = require "moonflow"

local PRICES = { tea = 300, cake = 450, jam = 275 }  -- cents
local PROMOS = { SPRING = 10, WELCOME = 15 }          -- percent off
local DEBOUNCE_MS = 300   -- quiet time before a typed code is checked
local PROMO_MS = 150      -- the promo service's answer time
local GATEWAY_MS = 200    -- the payment gateway's answer time
local PAY_TIMEOUT_MS = 1000

-- The promo service: the percent a code takes off, or false, after PROMO_MS.
local function checkPromo(code)
  return mf.timer(PROMO_MS):map(function() return PROMOS[code] or false end)
end

-- The payment gateway, as a test double a new user writes: "declined" fails,
-- "flaky" fails its first attempt only, "slow" never answers (the timeout's
-- case); any other card pays. Each subscription is one attempt.
local function pay(card, amount)
  local attempt = 0
  return mf.task(function(t)
    attempt = attempt + 1
    if card == "slow" then t:await(mf.never()) end
    t:await(mf.timer(GATEWAY_MS))
    if card == "declined" then error("the card was declined", 0) end
    if card == "flaky" and attempt == 1 then error("the gateway is busy", 0) end
    t:emit(("R-%s-%d"):format(card, amount))
  end)
end

-- Cents after the discount, rounded down.
local function total(lines, discount)
  local sum = 0
  for _, line in ipairs(lines) do sum = sum + line.qty * line.price end
  return sum - sum * discount // 100
end

local function quantity(lines, sku)
  for _, line in ipairs(lines) do
    if line.sku == sku then return line.qty end
  end
  return 0
end

-- One cart line, as the state, the draft and the `restored` mutation declare it.
local LINE = { sku = "string", qty = "integer", price = "integer" }

return mf.feature {
  name = "checkout",
  initial = { lines = mf.array(), promo = "", discount = 0, checking = false, total = 0, status = "editing" },
  state = {
    lines = { "list", of = LINE },
    promo = "string",                                 -- the code as typed
    discount = "integer",                             -- percent off, once the code checked out
    checking = "boolean",                             -- a promo check is running
    total = "integer",                                -- cents, after the discount
    status = { "enum", "editing", "paying", "paid" },
    banner = "string?",                               -- the last error, until dismissed or the next try
    receipt = "string?",
  },
  actions = {
    load = {},                                        -- restore the draft kept in SQLite
    add = { sku = "string", qty = "integer?" },
    drop = { sku = "string" },
    promo = { code = "string" },                      -- each keystroke: checked once typing pauses
    pay = { card = "string" },
    dismiss = {},                                     -- close the banner
  },
  mutations = {
    restored = { lines = { "list", of = LINE } },       -- the draft's lines, checked item by item
    line = { sku = "string", qty = "integer" },       -- the line's new quantity (0 drops it)
    typed = { code = "string" },
    checking = {},
    checked = { code = "string", discount = "integer" },
    paying = {},
    paid = { receipt = "string" },
    failed = { message = "string" },
    promoFailed = { message = "string" },             -- the promo service failed: no discount
    dismissed = {},
  },
  outputs = { receipt = { receipt = "string", total = "integer" } },
  strategy = { promo = "latest", pay = "exhaust" },
  invariants = {
    totalAddsUp = function(s) return s.total == total(s.lines, s.discount) end,
    noEmptyLines = function(s)
      for _, line in ipairs(s.lines) do if line.qty <= 0 then return false, line.sku end end
    end,
    paidHasReceipt = function(s) return s.status ~= "paid" or s.receipt ~= nil end,
  },
  repositories = { drafts = { sqlite = "checkout.db" } },
  services = { checkPromo = checkPromo, pay = pay },

  handle = function(action, state, env)
    local t = action.type
    if t == "load" then
      return env.services.drafts:getAll { ids = { 1 } }:map(function(found)
        return { type = "restored", lines = found[1] and found[1].lines or mf.array() }
      end)
    elseif t == "add" then
      if not PRICES[action.sku] then return { type = "failed", message = ("there is no %s in the shop"):format(action.sku) } end
      return { type = "line", sku = action.sku, qty = quantity(state.lines, action.sku) + (action.qty or 1) }
    elseif t == "drop" then
      return { type = "line", sku = action.sku, qty = 0 }
    elseif t == "promo" then
      local code = action.code
      local typed = mf.just { type = "typed", code = code }
      if code == "" then return typed end
      return mf.concat(typed, mf.timer(DEBOUNCE_MS):flatMap(function()
        return env.services.checkPromo(code)
          :map(function(percent) return { type = "checked", code = code, discount = percent or 0 } end)
          :startWith { type = "checking" }
          -- Found by `moonflow test --explore`: a failing promo service ended the stream with an error.
          :catchError(function(err) return mf.just { type = "promoFailed", message = tostring(err) } end)
      end))
    elseif t == "pay" then
      if #state.lines == 0 then return { type = "failed", message = "the cart is empty: add something first" } end
      return env.services.pay(action.card, state.total)
        :timeout(PAY_TIMEOUT_MS)
        :retry(1)
        :map(function(receipt) return { type = "paid", receipt = receipt } end)
        :startWith { type = "paying" }
        :catchError(function(err) return mf.just { type = "failed", message = "payment failed: " .. tostring(err) } end)
    elseif t == "dismiss" then
      return { type = "dismissed" }
    end
  end,

  reduce = function(state, m)
    local t = m.type
    local effect
    if t == "restored" then
      state.lines = m.lines
    elseif t == "line" then
      local lines, found = mf.array(), false
      for _, line in ipairs(state.lines) do
        if line.sku == m.sku then
          found = true
          if m.qty > 0 then lines[#lines + 1] = { sku = line.sku, qty = m.qty, price = line.price } end
        else
          lines[#lines + 1] = { sku = line.sku, qty = line.qty, price = line.price }
        end
      end
      if not found and m.qty > 0 then lines[#lines + 1] = { sku = m.sku, qty = m.qty, price = PRICES[m.sku] } end
      state.lines = lines
      effect = { type = "saveDraft" }
    elseif t == "typed" then
      state.promo, state.discount, state.checking = m.code, 0, false
    elseif t == "checking" then
      state.checking = true
    elseif t == "checked" then
      state.checking, state.discount = false, m.discount
      if m.discount == 0 then state.banner = ("the promo code %s is not valid"):format(m.code) end
    elseif t == "promoFailed" then
      state.checking, state.banner = false, "the promo code could not be checked: " .. m.message
    elseif t == "paying" then
      state.status, state.banner = "paying", nil
    elseif t == "paid" then
      state.status, state.receipt = "paid", m.receipt
    elseif t == "failed" then
      state.status, state.banner = "editing", m.message
    elseif t == "dismissed" then
      state.banner = nil
    end
    state.total = total(state.lines, state.discount)
    if t == "paid" then effect = { type = "receipt", receipt = m.receipt, total = state.total } end
    return state, effect
  end,

  effects = {
    -- Keeps the cart as it is now; nothing comes back to reduce.
    saveDraft = function(_effect, state, env)
      local lines = mf.array()
      for i, line in ipairs(state.lines) do lines[i] = { sku = line.sku, qty = line.qty, price = line.price } end
      return env.services.drafts:put({ id = 1, lines = lines }):filter(function() return false end)
    end,
  },
}
