-- upload (medium: a timer crossing): a file upload with a progress bar. `start` uploads in ten
-- chunks of 200 ms each, `cancel` stops it and clears the bar.
-- The bug: `cancel` clears the bar but leaves the chunks running, so the next chunk moves the
-- bar of an upload that is no longer there.
local mf = require "moonflow"

local CHUNK_MS = 200

return mf.feature {
  name = "upload",
  initial = { status = "idle", progress = 0 },
  state = { status = { "enum", "idle", "uploading", "done" }, progress = "integer" },
  actions = { start = {}, cancel = {} },
  mutations = { started = {}, chunk = { progress = "integer" }, cancelled = {} },
  strategy = { start = "exhaust" },
  invariants = {
    barOnlyWhileUploading = function(s)
      if s.status == "idle" then return s.progress == 0, s.progress end
    end,
  },

  handle = function(action, state, env)
    if action.type == "start" then
      if state.status == "uploading" then return nil end
      local chunks = mf.interval(CHUNK_MS):take(10)
        :map(function(i) return { type = "chunk", progress = (i + 1) * 10 } end)
      return mf.concat(mf.just { type = "started" }, env.cancellable("upload", chunks))
    elseif action.type == "cancel" then
      return { type = "cancelled" }
    end
  end,

  reduce = function(state, m)
    if m.type == "started" then
      state.status, state.progress = "uploading", 0
    elseif m.type == "chunk" then
      state.progress = m.progress
      if m.progress == 100 then state.status = "done" end
    elseif m.type == "cancelled" then
      state.status, state.progress = "idle", 0
    end
    return state
  end,
}
