-- seats (medium: a particular value): booking seats in a row of 8. `book` takes `count` more
-- seats (from 1 to 8 at a time), `release` gives the last booking back, `reset` empties the row.
-- The bug: the check for room is off by one (`<= CAPACITY + 1`), so a booking that fills the
-- row to exactly 9 goes through.
local mf = require "moonflow"

local CAPACITY = 8

return mf.feature {
  name = "seats",
  initial = { booked = 0, bookings = mf.array() },
  state = { booked = "integer", bookings = { "list", of = "integer" }, message = "string?" },
  actions = { book = { count = "integer" }, release = {}, reset = {} },
  mutations = { booked = { count = "integer" }, released = {}, reset = {}, refused = { message = "string" } },
  invariants = {
    noOverbooking = function(s) return s.booked <= CAPACITY, s.booked end,
  },

  handle = function(action, state)
    if action.type == "book" then
      local n = action.count
      if n < 1 or n > CAPACITY then return { type = "refused", message = "book 1 to 8 seats at a time" } end
      if state.booked + n <= CAPACITY + 1 then return { type = "booked", count = n } end
      return { type = "refused", message = ("only %d seats are left"):format(CAPACITY - state.booked) }
    elseif action.type == "release" then
      return { type = "released" }
    elseif action.type == "reset" then
      return { type = "reset" }
    end
  end,

  reduce = function(state, m)
    if m.type == "booked" then
      state.bookings[#state.bookings + 1] = m.count
      state.booked, state.message = state.booked + m.count, nil
    elseif m.type == "released" then
      local last = state.bookings[#state.bookings]
      if last then
        state.bookings[#state.bookings] = nil
        state.booked = state.booked - last
      end
    elseif m.type == "reset" then
      state.booked, state.bookings, state.message = 0, mf.array(), nil
    elseif m.type == "refused" then
      state.message = m.message
    end
    return state
  end,
}
