-- luacheck's configuration for the Lua under Sources/ (scripts/check-lua runs it on every
-- Sources/**/*.lua file git knows, so a new warning fails `scripts/test`'s phase `lua`).
-- `moonflow check` does not read this file: it lints plugins with a configuration of its own
-- (Sources/MoonflowTool/Plugins/lint_config.lua). What a section below allows is what a file
-- does on purpose; anything else luacheck reports is fixed in the file.

-- Every file runs on Debian's liblua5.4, the Lua the package builds against.
std = "lua54"

-- Meaning, not formatting, as the plugin lint: a comment or an error message may run long.
max_line_length = false

-- Annotations for lua-language-server (`---@meta`), never run: each stub's parameters are
-- what LuaLS shows for the function, so they go unused by design, and each class table
-- (`local Stream = {}`) only collects the stubs LuaLS reads.
files["Sources/MoonflowTool/Types/moonflow_meta.lua"] = {
  unused_args = false,
  ignore = { "241" },  -- a class table given methods and never read
}

-- Feature hosts replace the global `next` so that `next(view)` sees the state a read-only
-- view shows (installNext; `moonflow exec` keeps Lua's own).
files["Sources/MoonflowLua/Lua/dispatch.lua"] = {
  globals = { "next" },
}

-- The sandbox takes the native-library loader and the path search out of `package`, so a
-- sandboxed script can load no C code and find no file but through the host's searcher.
files["Sources/LuaKit/Lua/sandbox.lua"] = {
  globals = {
    package = { fields = { loadlib = { read_only = false }, searchpath = { read_only = false } } },
  },
}

-- The spec driver sends a spec's io.write and print into a file the host reads back, so
-- they keep their order with its results (io.stdout, io.write and print are replaced).
files["Sources/MoonflowTool/Specs/spec_driver.lua"] = {
  globals = {
    "print",
    io = { fields = { stdout = { read_only = false }, write = { read_only = false } } },
  },
}
