-- users: the Harmony seed (004). A user list over a repository declared in
-- the plugin (`repositories`): the host gives it the table `users` of the
-- SQLite file users.db beside this file (`moonflow run --db DIR` puts it in
-- DIR, `--db :memory:` keeps nothing) as `env.services.users`, whose methods
-- run the default CRUD interactors (Get, GetAll, Put, PutAll, Delete,
-- DeleteAll) by id and by query on an executor and answer with streams.
-- Changes outlive the run; the seed fills the table when it is made.
-- Writes re-read the list, as a screen would.
local mf = require "moonflow"

-- How the list is shown: everyone, by name.
local LIST = { orderBy = "name" }

return mf.feature {
  name = "users",
  initial = { users = {}, selected = false },
  state = {
    users = { "list", of = { id = "integer", name = "string", team = "string" } },
    selected = "any", -- false, or the selected user { id, name, team }
    lastRemoved = "integer?", -- how many users the last disband removed
    error = "string?",
  },
  actions = {
    load = {},
    team = { team = "string" },
    select = { id = "integer" },
    add = { id = "integer", name = "string", team = "string" },
    rename = { id = "integer", name = "string" },
    remove = { id = "integer" },
    disband = { team = "string" },
  },
  mutations = {
    list = { users = "table" },
    selected = { user = "table" },
    removed = { count = "integer" },
    failure = { message = "string" },
  },
  invariants = {
    idsAreUnique = function(s)
      local seen = {}
      for _, u in ipairs(s.users) do
        if seen[u.id] then return false, u.id end
        seen[u.id] = true
      end
    end,
  },
  repositories = {
    users = {
      sqlite = "users.db",
      indexes = { "team", "name" },
      seed = {
        { id = 1, name = "Ada", team = "compilers" },
        { id = 2, name = "Grace", team = "compilers" },
        { id = 3, name = "Linus", team = "kernel" },
      },
    },
  },

  handle = function(action, _state, env)
    local users = env.services.users
    local function list() return users:getAll(LIST) end
    local stream
    if action.type == "load" then
      stream = list()
    elseif action.type == "team" then
      stream = users:getAll { where = { team = action.team }, orderBy = "name" }
    elseif action.type == "select" then
      stream = users:get { id = action.id }
        :map(function(user) return { type = "selected", user = user } end)
    elseif action.type == "add" then
      stream = users:put { id = action.id, name = action.name, team = action.team }
        :flatMap(list)
    elseif action.type == "rename" then
      -- Read, change, write back: Get then Put, by id.
      stream = users:get { id = action.id }
        :flatMap(function(user)
          user.name = action.name
          return users:put(user)
        end)
        :flatMap(list)
    elseif action.type == "remove" then
      stream = users:delete { id = action.id }:flatMap(list)
    elseif action.type == "disband" then
      stream = users:deleteAll { where = { team = action.team } }
        :flatMap(function(count)
          return list():startWith(count)
        end)
    end
    return stream
      :map(function(v)
        if math.type(v) == "integer" then return { type = "removed", count = v } end
        if v.type then return v end
        return { type = "list", users = v }
      end)
      :catchError(function(err) return mf.just { type = "failure", message = tostring(err) } end)
  end,

  reduce = function(state, m)
    if m.type == "list" then
      state.users, state.error = m.users, nil
      -- A selected user who is gone from the list is no longer selected.
      local still = false
      for _, user in ipairs(m.users) do
        if state.selected and user.id == state.selected.id then still = true end
      end
      if not still then state.selected = false end
    elseif m.type == "selected" then
      state.selected, state.error = m.user, nil
    elseif m.type == "removed" then
      state.lastRemoved = m.count
    elseif m.type == "failure" then
      state.error = m.message
    end
    return state
  end,
}
