-- A reload's plugin modules (FeatureHost+Reload.swift): the modules `NAME.x` of the plugins
-- named in `names` (a set) leave package.loaded, so the new code requires them afresh.
--   Run with `names`: takes them out and returns them.
--   Run with `names` and what that returned: after a failed reload, takes out what the new
--   code required and puts the old modules back.
local names, saved = ...

-- The keys of package.loaded that are modules of the named plugins.
local function pluginModules()
  local keys = {}
  for key in pairs(package.loaded) do
    if type(key) == "string" then
      local prefix = key:match("^([^.]+)%.")
      if prefix and names[prefix] then keys[#keys + 1] = key end
    end
  end
  return keys
end

if saved == nil then
  saved = {}
  for _, key in ipairs(pluginModules()) do saved[key] = package.loaded[key] end
  for key in pairs(saved) do package.loaded[key] = nil end
  return saved
end
for _, key in ipairs(pluginModules()) do package.loaded[key] = nil end
for key, value in pairs(saved) do package.loaded[key] = value end
