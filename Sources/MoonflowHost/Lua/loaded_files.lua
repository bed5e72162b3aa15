-- The files of the modules required so far (FeatureHost+Reload.swift's loadedFiles): each
-- name in package.loaded that is not preloaded and that package.path finds.
local out = {}
for name in pairs(package.loaded) do
  if type(name) == "string" and not package.preload[name] then
    local file = package.searchpath(name, package.path)
    if file then out[#out + 1] = file end
  end
end
return out
