-- Registers `require "moonflow.test"` (TestModule.swift runs this once per Lua state with the
-- compiled moonflow_test.lua and `core`, the Swift half): the module is built when first required.
local chunk, core = ...
package.preload["moonflow.test"] = function() return chunk(core) end
