-- Registers `require "moonflow.test"` (TestModule.swift runs this once per Lua state with the
-- compiled moonflow_test.lua, `core`, the Swift half, and explore.lua): the module is built when first required.
local chunk, core, explorer = ...
package.preload["moonflow.test"] = function() return chunk(core, explorer) end
