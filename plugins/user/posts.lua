-- user.posts: the seed's PostsInteractor. Loading works like the profile's;
-- selecting a post returns an `openPost` effect with no handler here, so it
-- goes out to the host, as the seed's coordinator receives it.
local mf = require "moonflow"

local posts = {
  [1] = { { id = 10, title = "Notes on the Analytical Engine" }, { id = 11, title = "On Bernoulli numbers" } },
}

return mf.feature {
  name = "posts",
  initial = { status = "initialized", items = {} },
  state = {
    status = { "enum", "initialized", "loading", "loaded", "failed" },
    items = { "list", of = { id = "integer", title = "string" } },
    selected = "integer?", -- the id of the post selected last
    error = "string?",
  },
  actions = { load = { userId = "integer" }, select = { id = "integer" } },
  -- `openPost` has no handler here: it goes out to the host.
  outputs = { openPost = { id = "integer" } },
  mutations = {
    load = { userId = "integer" },
    loaded = { items = "table" },
    failed = { message = "string" },
    selected = { id = "integer" },
  },

  handle = function(action)
    if action.type == "load" then
      return { type = "load", userId = action.userId }
    elseif action.type == "select" then
      return { type = "selected", id = action.id }
    end
  end,

  reduce = function(state, m)
    if m.type == "load" then
      if state.status == "loading" then return state end
      state.status = "loading"
      return state, { type = "fetchPosts", userId = m.userId }
    elseif m.type == "loaded" then
      state.status, state.items = "loaded", m.items
    elseif m.type == "failed" then
      state.status, state.error = "failed", m.message
    elseif m.type == "selected" then
      state.selected = m.id
      return state, { type = "openPost", id = m.id }
    end
    return state
  end,

  effects = {
    fetchPosts = function(effect, _, env)
      return env.services.readPosts(effect.userId)
        :map(function(items) return { type = "loaded", items = items } end)
        :catchError(function(err) return mf.just { type = "failed", message = tostring(err) } end)
    end,
  },

  services = {
    readPosts = function(userId)
      return mf.timer(150, posts[userId] or {})
    end,
  },
}
