-- A feature whose every `step` runs a random program of writes chosen by its
-- seed: set, delete, nil-assign absent keys, insert and remove in lists (at the
-- end and in the middle), emptied lists, nested tables, rewrites of a value.
-- The `--state patch` and inspector property tests run it.
local mf = require "moonflow"
return mf.feature {
  name = "writes",
  initial = { n = 0, list = { "a", "b", "c" }, nested = { deep = { x = 1 } }, tags = {} },
  actions = { step = { seed = "integer" } },
  mutations = { step = { seed = "integer" } },
  handle = function(a) return { type = "step", seed = a.seed } end,
  reduce = function(state, m)
    local seed = m.seed
    local function rand(n) seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n + 1 end
    local keys = { "a", "b", "error", "n", "list", "nested", "tags", "extra" }
    for _ = 1, rand(4) do
      local kind = rand(16)
      local key = keys[rand(#keys)]
      if kind == 1 then state[key] = rand(100)
      elseif kind == 2 then state[key] = nil
      elseif kind == 3 then state.error = nil; state.absent = nil
      elseif kind == 4 then
        if type(state.list) ~= "table" then state.list = {} end
        for _ = 1, rand(3) do state.list[#state.list + 1] = "i" .. rand(50) end
      elseif kind == 5 then
        if type(state.list) == "table" and #state.list > 0 then table.remove(state.list, rand(#state.list)) end
      elseif kind == 6 then
        if type(state.list) == "table" then for i = #state.list, 1, -1 do state.list[i] = nil end end
      elseif kind == 7 then state.list = {}
      elseif kind == 8 then
        if type(state.list) == "table" and #state.list > 0 then table.insert(state.list, rand(#state.list), "m" .. rand(9)) end
      elseif kind == 9 then
        if type(state.nested) ~= "table" then state.nested = {} end
        if type(state.nested.deep) ~= "table" then state.nested.deep = {} end
        state.nested.deep["k" .. rand(4)] = rand(3) == 1 and { rand(5) } or rand(5)
      elseif kind == 10 then
        if type(state.nested) == "table" then state.nested.deep = nil end
      elseif kind == 11 then state.tags = { t = rand(3) }
      elseif kind == 12 then
        if type(state.tags) == "table" then state.tags[#state.tags + 1] = rand(9) end
      elseif kind == 13 then
        if type(state.list) == "table" and #state.list > 0 then
          for _ = 1, math.min(rand(3), #state.list) do state.list[#state.list] = nil end
        end
      elseif kind == 14 then
        if type(state.list) == "table" and #state.list > 0 then state.list[rand(#state.list)] = "r" .. rand(9) end
      elseif kind == 15 then state.n = state.n
      else
        if type(state.list) == "table" then state.list.name = "x" end
      end
    end
    return state
  end,
}
