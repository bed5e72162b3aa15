// The profile installer: puts the time limit's library functions into a state
// (the watchdog's coroutine, xpcall and table functions, and the matcher). Calls
// watchdog.c and match.c. The sandbox and the text-only searcher are Lua files in
// LuaKit (Lua/sandbox.lua, Lua/text_searcher.lua).
#include "internal.h"
#include <string.h>

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
  if (status == LUA_OK) {
    mf_budget_of(L)->watched = 1;
    mf_gc_hold_first(L);
  }
  return status;
}
