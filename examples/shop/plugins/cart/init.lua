-- cart: the lines of an order, one per product; adding a product twice adds to its quantity.
local mf = require "moonflow"

local Line = { sku = "string", name = "string", price = "integer", qty = "integer" }

return mf.feature {
  name = "cart",
  state = { lines = { "list", of = Line } },
  initial = { lines = mf.array() },
  actions = {
    add = { sku = "string", name = "string", price = "integer" },
    remove = { sku = "string" },
    setQty = { sku = "string", qty = "integer" },
    clear = {},
  },
  mutations = {
    added = { sku = "string", name = "string", price = "integer" },
    removed = { sku = "string" },
    qtySet = { sku = "string", qty = "integer" },
    cleared = {},
  },

  handle = function(action)
    local past = { add = "added", remove = "removed", setQty = "qtySet", clear = "cleared" }
    return { type = past[action.type], sku = action.sku, name = action.name, price = action.price, qty = action.qty }
  end,

  reduce = function(state, m)
    if m.type == "cleared" then
      state.lines = mf.array()
      return state
    end
    local lines, at = state.lines, nil
    for i, line in ipairs(lines) do
      if line.sku == m.sku then at = i end
    end
    if m.type == "added" then
      if at then
        lines[at].qty = lines[at].qty + 1
      else
        lines[#lines + 1] = { sku = m.sku, name = m.name, price = m.price, qty = 1 }
      end
    elseif at and (m.type == "removed" or m.qty <= 0) then
      table.remove(lines, at)
    elseif at then
      lines[at].qty = m.qty
    end
    return state
  end,
}
