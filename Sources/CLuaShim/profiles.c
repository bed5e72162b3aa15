// Profiles: the sandbox (what a sandboxed script may reach, and where `require`
// looks) and the text-only module searcher, written in Lua and run as text chunks;
// and the time limit's library functions. Calls watchdog.c and match.c, only for
// the latter.
#include "internal.h"
#include <string.h>

static const char *TEXT_SEARCHER =
  "local package, searchpath, loadfile, type, error = package, package.searchpath, loadfile, type, error\n"
  "package.searchers[2] = function(name)\n"
  "  local path = package.path\n"
  "  if type(path) ~= 'string' and type(path) ~= 'number' then error(\"'package.path' must be a string\", 0) end\n"
  "  local file, err = searchpath(name, path)\n"
  "  if not file then return err end\n"
  "  local chunk, lerr = loadfile(file, 't')\n"
  "  if not chunk then error((\"error loading module '%s' from file '%s':\\n\\t%s\"):format(name, file, lerr), 0) end\n"
  "  return chunk, file\n"
  "end\n";

static const char *SANDBOX =
  "local G, load0, setmetatable0, getmetatable0, rawset0, error0, select, type, tostring, next ="
  "  _G, load, setmetatable, getmetatable, rawset, error, select, type, tostring, next\n"
  "local loadfile0, ipairs, concat, match, find, gsub, format = loadfile, ipairs, table.concat, string.match, string.find, string.gsub, string.format\n"
  "os.execute, os.exit, os.remove, os.rename, os.tmpname, os.getenv, os.setlocale = nil\n"
  "G.io, G.debug, G.dofile, G.loadfile = nil, nil, nil, nil\n"
  "package.loaded.io, package.loaded.debug = nil, nil\n"
  "package.loadlib, package.searchpath = nil, nil\n"
  "package.path, package.cpath = '', ''  -- kept as strings for hosts that add to them; no searcher reads them\n"
  // require finds what the host preloads and NAME.lua or NAME/init.lua under
  // one folder the host chooses (the script's), as text; package.path plays no part.
  "local root = '.'\n"
  "package.searchers = { package.searchers[1], function(name)\n"
  "  if not match(name, '^[%w_]+[%w_.]*$') or find(name, '..', 1, true) or match(name, '%.$') then\n"
  "    return format('no module %s in the sandbox (a module name is letters, digits, _ and dots)', name)\n"
  "  end\n"
  "  local base, tried = root .. '/' .. gsub(name, '%.', '/'), {}\n"
  "  for _, file in ipairs { base .. '.lua', base .. '/init.lua' } do\n"
  "    local chunk, err = loadfile0(file, 't')\n"
  "    if chunk then return chunk, file end\n"
  "    if not find(err, '^cannot open') then\n"
  "      error0(format('error loading module \\'%s\\' from file \\'%s\\':\\n\\t%s', name, file, err), 2)\n"
  "    end\n"
  "    tried[#tried + 1] = format('no file \\'%s\\'', file)\n"
  "  end\n"
  "  return concat(tried, '\\n\\t')\n"
  "end }\n"
  "G.load = function(chunk, name, mode, ...)\n"
  "  if mode ~= nil and mode ~= 't' then error0(\"load: binary chunks are refused in the sandbox (use mode 't')\", 2) end\n"
  "  if select('#', ...) > 0 then return load0(chunk, name, 't', ...) end\n"
  "  return load0(chunk, name, 't')\n"
  "end\n"
  "G.setmetatable = function(t, mt)\n"
  "  if t == G then error0('setmetatable: the sandbox\\'s globals cannot get a metatable', 2) end\n"
  "  if type(mt) == 'table' and G.rawget(mt, '__gc') ~= nil then\n"
  "    error0('setmetatable: __gc metamethods are refused in the sandbox', 2)\n"
  "  end\n"
  "  return setmetatable0(t, mt)\n"
  "end\n"
  "local frozen = setmetatable0({}, { __mode = 'k' })\n"
  "local function freeze(name, t)\n"
  "  local function walk(_, k) return next(t, k) end\n"  // pairs never hands out t itself
  "  local proxy = setmetatable0({}, {\n"
  "    __index = t,\n"
  "    __newindex = function(_, k) error0(format('attempt to modify read-only table %s (field %s)', name, tostring(k)), 2) end,\n"
  "    __pairs = function(self) return walk, self, nil end,\n"
  "    __len = function() return #t end,\n"
  "    __metatable = false,\n"
  "  })\n"
  "  frozen[proxy] = true\n"
  "  return proxy\n"
  "end\n"
  "G.rawset = function(t, k, v)\n"
  "  if frozen[t] then error0(format('rawset: %s is read-only in the sandbox', tostring(k)), 2) end\n"
  "  return rawset0(t, k, v)\n"
  "end\n"
  "local smt = getmetatable0('')\n"
  "for _, name in ipairs { 'string', 'table', 'math', 'utf8', 'coroutine', 'os' } do\n"
  "  local proxy = freeze(name, G[name])\n"
  "  G[name] = proxy\n"
  "  package.loaded[name] = proxy\n"
  "end\n"
  "smt.__metatable = false\n"
  "return function(folder) root = folder end\n";

static int pushstring_k(lua_State *L) {
  lua_pushstring(L, (const char *)lua_touserdata(L, 1));
  return 1;
}

static int run_chunk(lua_State *L, const char *code, const char *name) {
  MF_NEED_ROOM(L, 1, 0);
  int status = luaL_loadbufferx(L, code, strlen(code), name, "t");
  if (status != LUA_OK) return status;
  return lua_pcall(L, 0, 0, 0);
}

static const char SANDBOX_ROOT_KEY = 0;

int mf_apply_sandbox(lua_State *L) {
  MF_NEED_ROOM(L, 1, 0);
  int status = luaL_loadbufferx(L, SANDBOX, strlen(SANDBOX), "=[moonflow sandbox]", "t");
  if (status != LUA_OK) return status;
  status = lua_pcall(L, 0, 1, 0);
  if (status != LUA_OK) return status;
  lua_rawsetp(L, LUA_REGISTRYINDEX, &SANDBOX_ROOT_KEY);  // the setter of the module folder
  return LUA_OK;
}

int mf_sandbox_module_root(lua_State *L, const char *folder) {
  MF_NEED_ROOM(L, 3, 0);
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &SANDBOX_ROOT_KEY) != LUA_TFUNCTION) { lua_pop(L, 1); return LUA_OK; }
  lua_pushcfunction(L, pushstring_k);
  lua_pushlightuserdata(L, (void *)folder);
  int status = lua_pcall(L, 1, 1, 0);
  if (status != LUA_OK) { lua_remove(L, -2); return status; }
  status = lua_pcall(L, 1, 0, 0);
  return status;
}
int mf_install_text_searcher(lua_State *L) { return run_chunk(L, TEXT_SEARCHER, "=[moonflow searcher]"); }

// MARK: - The time limit's libraries

/// Inside the protected call: the watchdog's coroutine, xpcall and table functions,
/// then the matcher in `string`. Installed here rather than by the watchdog, because
/// the matcher calls the watchdog (to poll the deadline) and must not be called by it.
static int install_watchdog_k(lua_State *L) {
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  mf_install_timed_functions(L);
  if (lua_getfield(L, -1, LUA_STRLIBNAME) == LUA_TTABLE) mf_install_matcher(L, lua_gettop(L));
  return 0;
}

int mf_install_watchdog(lua_State *L) {
  MF_NEED_ROOM(L, 1, 0);
  if (!mf_start_watchdog()) {
    lua_pushliteral(L, "moonflow: cannot start the time-limit watchdog thread");
    return LUA_ERRRUN;
  }
  lua_pushcfunction(L, install_watchdog_k);
  int status = lua_pcall(L, 0, 0, 0);
  if (status == LUA_OK) mf_budget_of(L)->watched = 1;
  return status;
}
