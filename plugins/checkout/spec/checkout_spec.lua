-- checkout: the cart and its totals, the debounced promo check, the payment's
-- timeout and retry, the banner, and the draft kept between runs.
local T = require "moonflow.test"

local function cart(store)
  store:send({ type = "add", sku = "tea" }, function(s)
    s.lines = { { sku = "tea", qty = 1, price = 300 } }
    s.total = 300
  end)
  store:send({ type = "add", sku = "cake", qty = 2 }, function(s)
    s.lines[2] = { sku = "cake", qty = 2, price = 450 }
    s.total = 1200
  end)
end

describe("checkout", function()
  describe("the cart", function()
    it("adds lines, adds to a line, drops one, and totals in cents", function()
      local store = T.store("checkout")
      cart(store)
      store:send({ type = "add", sku = "tea", qty = 2 }, function(s)
        s.lines[1].qty = 3
        s.total = 1800
      end)
      store:send({ type = "drop", sku = "tea" }, function(s)
        s.lines = { { sku = "cake", qty = 2, price = 450 } }
        s.total = 900
      end)
      store:finish()
    end)

    it("names what the shop does not sell in the banner", function()
      local store = T.store("checkout")
      store:send({ type = "add", sku = "coffee" }, function(s)
        s.banner = "there is no coffee in the shop"
      end)
      store:send({ type = "dismiss" }, function(s) s.banner = nil end)
      store:finish()
    end)

    it("keeps a draft that a later load restores", function()
      local store = T.store("checkout")
      cart(store)
      store:advance(0)
      store:send({ type = "load" })
      store:receive({ type = "restored", lines = { { sku = "tea", qty = 1, price = 300 }, { sku = "cake", qty = 2, price = 450 } } })
      store:finish()
    end)
  end)

  describe("the promo code", function()
    it("is checked once typing pauses, and only the last code typed", function()
      local store = T.store("checkout")
      cart(store)
      store:send({ type = "promo", code = "SPR" }, function(s) s.promo = "SPR" end)
      store:advance(100)
      store:send({ type = "promo", code = "SPRING" }, function(s) s.promo = "SPRING" end)
      store:advance(300)
      store:receive({ type = "checking" }, function(s) s.checking = true end)
      store:advance(150)
      store:receive({ type = "checked", code = "SPRING", discount = 10 }, function(s)
        s.checking = false
        s.discount = 10
        s.total = 1080
      end)
      store:finish()
    end)

    it("shows a code that is not valid in the banner", function()
      local store = T.store("checkout")
      store:send({ type = "promo", code = "FREE" }, function(s) s.promo = "FREE" end)
      store:advance(450)
      store:receive({ type = "checking" }, function(s) s.checking = true end)
      store:receive({ type = "checked", code = "FREE", discount = 0 }, function(s)
        s.checking = false
        s.banner = "the promo code FREE is not valid"
      end)
      store:finish()
    end)
  end)

  describe("the payment", function()
    it("pays, and tells the app with the receipt", function()
      local store = T.store("checkout")
      cart(store)
      store:send({ type = "pay", card = "visa" }, function(s) s.status = "paying" end)
      store:advance(200)
      store:receive({ type = "paid", receipt = "R-visa-1200" }, function(s)
        s.status = "paid"
        s.receipt = "R-visa-1200"
      end)
      store:receiveEffect({ type = "receipt", receipt = "R-visa-1200", total = 1200 })
      store:finish()
    end)

    it("retries once when the gateway fails, and a double tap pays once", function()
      local store = T.store("checkout")
      cart(store)
      store:send({ type = "pay", card = "flaky" }, function(s) s.status = "paying" end)
      store:send({ type = "pay", card = "flaky" })
      store:advance(400)
      store:receive({ type = "paid", receipt = "R-flaky-1200" }, function(s)
        s.status = "paid"
        s.receipt = "R-flaky-1200"
      end)
      store:receiveEffect({ type = "receipt", receipt = "R-flaky-1200", total = 1200 })
      store:finish()
    end)

    it("gives up after the retry and shows why", function()
      local store = T.store("checkout")
      cart(store)
      store:send({ type = "pay", card = "declined" }, function(s) s.status = "paying" end)
      store:advance(400)
      store:receive({ type = "failed", message = "payment failed: the card was declined" }, function(s)
        s.status = "editing"
        s.banner = "payment failed: the card was declined"
      end)
      store:finish()
    end)

    it("times out a gateway that never answers, twice, then shows it", function()
      local store = T.store("checkout")
      cart(store)
      store:send({ type = "pay", card = "slow" }, function(s) s.status = "paying" end)
      store:advance(1999)
      store:advance(1)
      store:receive({ type = "failed", message = "payment failed: timed out after 1000 ms" }, function(s)
        s.status = "editing"
        s.banner = "payment failed: timed out after 1000 ms"
      end)
      store:finish()
    end)

    it("refuses an empty cart", function()
      local store = T.store("checkout")
      store:send({ type = "pay", card = "visa" }, function(s)
        s.banner = "the cart is empty: add something first"
      end)
      store:finish()
    end)
  end)
end)
