-- Registers `require "moonflow.test"` (TestModule.swift runs this once per Lua state with the
-- compiled moonflow_test.lua, `core`, the Swift half, explore.lua, generators.lua and guide.lua): the module is built when first required.
local chunk, core, explorer, generators, guide = ...
package.preload["moonflow.test"] = function() return chunk(core, explorer, generators, guide) end
