-- A feature whose every `step` runs a random program of writes chosen by its
-- seed, within a declared state of every shape a view holds: scalars, an
-- optional, an enum, lists of strings and of records (with lists inside),
-- a map, nested and optional records. Set, insert and remove, at the end and
-- in the middle, of fields, list items and map entries; whole tables replaced.
-- `qty` and `title` each change one field.
-- GeneratedTypesTests' view-model property test runs it: the view patched
-- change by change must equal the state decoded afresh after every step.
local mf = require "moonflow"

local function item(name, qty)
  return { name = name, qty = qty, done = false, marks = mf.array() }
end

return mf.feature {
  name = "views",
  initial = {
    title = "", count = 0, mode = "idle", tags = mf.array(), items = { item("a", 1), item("b", 2) },
    scores = {}, owner = { name = "ada", age = 36, address = { city = "london" } },
  },
  state = {
    title = "string",
    count = "integer",
    note = "string?",
    mode = { "enum", "idle", "busy" },
    tags = { "list", of = "string" },
    items = { "list", of = { name = "string", qty = "integer", done = "boolean", marks = { "list", of = "integer" } } },
    scores = { "map", of = "integer" },
    owner = { name = "string", age = "integer", address = { city = "string", zip = "string?" } },
    best = { "record?", name = "string", qty = "integer" },
  },
  actions = { step = { seed = "integer" }, qty = { line = "integer", qty = "integer" }, title = { text = "string" } },
  mutations = { step = { seed = "integer" }, qty = { line = "integer", qty = "integer" }, title = { text = "string" } },
  handle = function(a) return { type = a.type, seed = a.seed, line = a.line, qty = a.qty, text = a.text } end,
  reduce = function(state, m)
    if m.type == "qty" then state.items[m.line].qty = m.qty; return state end
    if m.type == "title" then state.title = m.text; return state end
    local seed = m.seed
    local function rand(n) seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n + 1 end
    local names = { "x", "y", "z", "w" }
    for _ = 1, rand(4) do
      local kind = rand(24)
      local items, tags = state.items, state.tags
      local it = #items > 0 and items[rand(#items)] or nil
      if kind == 1 then state.title = "t" .. rand(9)
      elseif kind == 2 then state.count = state.count + rand(5)
      elseif kind == 3 then state.note = rand(2) == 1 and ("n" .. rand(9)) or nil
      elseif kind == 4 then state.mode = rand(2) == 1 and "idle" or "busy"
      elseif kind == 5 then tags[#tags + 1] = "g" .. rand(9)
      elseif kind == 6 then if #tags > 0 then tags[#tags] = nil end
      elseif kind == 7 then if #tags > 0 then tags[rand(#tags)] = "s" .. rand(9) end
      elseif kind == 8 then table.insert(tags, rand(#tags + 1), "i" .. rand(9))
      elseif kind == 9 then if #tags > 0 then table.remove(tags, rand(#tags)) end
      elseif kind == 10 then items[#items + 1] = item(names[rand(4)], rand(9))
      elseif kind == 11 then if #items > 0 then items[#items] = nil end
      elseif kind == 12 then if #items > 0 then table.remove(items, rand(#items)) end
      elseif kind == 13 then table.insert(items, rand(#items + 1), item("m", rand(9)))
      elseif kind == 14 then if it then it.qty = it.qty + rand(3) end
      elseif kind == 15 then if it then it.done = not it.done end
      elseif kind == 16 then if it then it.marks[#it.marks + 1] = rand(99) end
      elseif kind == 17 then if it and #it.marks > 0 then it.marks[rand(#it.marks)] = rand(99) end
      elseif kind == 18 then state.scores[names[rand(4)]] = rand(50)
      elseif kind == 19 then state.scores[names[rand(4)]] = nil
      elseif kind == 20 then state.owner.age = state.owner.age + 1; state.owner.address.zip = rand(2) == 1 and "z" .. rand(9) or nil
      elseif kind == 21 then state.owner = { name = names[rand(4)], age = rand(90), address = { city = "c" .. rand(9) } }
      elseif kind == 22 then state.best = rand(2) == 1 and { name = "b", qty = rand(9) } or nil
      elseif kind == 23 then if state.best then state.best.qty = state.best.qty + 1 end
      else state.items = { item("r", rand(9)) } end
    end
    return state
  end,
}
