-- Puts a plugin folder's parent on package.path (FeatureHost+Plugins.swift), so that
-- require "NAME.mod" finds ROOT/NAME/mod.lua; a root already there is not added again.
local root = ...
local entry = root .. "/?.lua;" .. root .. "/?/init.lua;"
if not package.path:find(entry, 1, true) then package.path = entry .. package.path end
