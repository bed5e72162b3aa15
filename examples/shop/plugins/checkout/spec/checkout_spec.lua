-- checkout: cart, address and payment composed; the payment's receipt clears the cart
-- (checkout's `react`). Run: moonflow test examples/shop/plugins/checkout/spec
local T = require "moonflow.test"
local mf = require "moonflow"

-- The app's payment provider (a Swift service), stubbed: it answers after 300 ms.
local function checkout()
  return T.store("checkout", {
    services = { charge = function(amount) return mf.timer(300, { id = "r-" .. amount, amount = amount }) end },
  })
end

local PEN = { type = "add", sku = "pen", name = "Pen", price = 150 }
local PEN_LINE = { sku = "pen", name = "Pen", price = 150, qty = 1 }

describe("checkout", function()
  it("adds lines and totals them", function()
    local store = checkout()
    store:send(PEN, function(s) s.lines, s.total = { PEN_LINE }, 150 end)
    store:send(PEN, function(s) s.lines[1].qty, s.total = 2, 300 end)
    store:send({ type = "setQty", sku = "pen", qty = 0 }, function(s) s.lines, s.total = {}, 0 end)
    store:finish()
  end)

  it("clears the cart when the payment's receipt comes, then sends the receipt out", function()
    local store = checkout()
    store:send(PEN, function(s) s.lines, s.total = { PEN_LINE }, 150 end)
    store:send({ type = "setAddress", name = "Ada", street = "1 Engine Row", city = "London" }, function(s)
      s.address = "Ada, 1 Engine Row, London"
    end)
    store:send({ type = "pay" }, function(s) s.payment = "paying" end)
    store:advance(300)
    store:receive({ type = "paid", id = "r-150", amount = 150 }, function(s)
      s.payment, s.receipt = "paid", "r-150"
    end)
    -- What react sent: the cart's `clear`, reduced after the payment's step, before the receipt goes out.
    store:receive({ type = "cleared" }, function(s) s.lines, s.total = {}, 0 end)
    store:receiveEffect({ type = "receipt", id = "r-150", amount = 150 }, "payment")
    store:finish()
  end)

  it("clears the cart at once when the payment answers at once", function()
    local store = T.store("checkout", {
      services = { charge = function(amount) return { id = "stub", amount = amount } end },
    })
    store:send(PEN, function(s) s.lines, s.total = { PEN_LINE }, 150 end)
    store:send({ type = "pay" }, function(s)
      s.payment, s.receipt, s.lines, s.total = "paid", "stub", {}, 0
    end)
    store:receiveEffect({ type = "receipt", id = "stub", amount = 150 }, "payment")
    store:finish()
  end)

  it("keeps the cart when the charge fails, and says why", function()
    local store = T.store("checkout", {
      services = { charge = function() return mf.fail("card declined") end },
    })
    store:send(PEN, function(s) s.lines, s.total = { PEN_LINE }, 150 end)
    store:send({ type = "pay" }, function(s) s.declined = "card declined" end)
    store:finish()
  end)

  it("refuses an action it does not declare, naming those it does", function()
    local store = checkout()
    store:sendRefused({ type = "clear" }, "declared actions: add, pay, remove, setAddress, setQty")
    store:finish()
  end)
end)
