-- user: the Interactor seed's UserInteractor. Two child features, profile and
-- posts (each loaded from a service through an internal effect), composed
-- with mf.compose into one user view model. Selecting a post emits an outward
-- `openPost` effect, tagged `"from":"posts"`, for the coordinator.
local mf = require "moonflow"

return mf.compose {
  name = "user",
  -- What `combine` makes of the children's states.
  state = {
    name = "string",
    bio = "string",
    titles = { "list", of = "string" },
    loading = "boolean",
    error = "string?",
  },
  children = {
    profile = require "user.profile",
    posts = require "user.posts",
  },

  invariants = {
    titlesAreNamed = function(s)
      for _, t in ipairs(s.titles) do if t == "" then return false end end
    end,
    errorNamesTheCause = function(s) return s.error == nil or #s.error > 0 end,
  },

  route = function(action)
    if action.type == "loadProfile" then
      return "profile", { type = "load", userId = action.userId }
    elseif action.type == "loadPosts" then
      return "posts", { type = "load", userId = action.userId }
    elseif action.type == "selectPost" then
      return "posts", { type = "select", id = action.id }
    end
  end,

  -- The seed's UserViewModel: both children folded into one.
  combine = function(s)
    local titles = {}
    for i, post in ipairs(s.posts.items) do titles[i] = post.title end
    return {
      name = s.profile.name or "",
      bio = s.profile.bio or "",
      titles = titles,
      loading = s.profile.status == "loading" or s.posts.status == "loading",
      error = s.profile.error or s.posts.error,
    }
  end,
}
