// The watchdog on the portable platform forms (platform.c built with
// MF_PORTABLE_PLATFORM, as on Darwin): a looping chunk, and one that loops
// inside pcall, are stopped with the time-limit error soon after the limit.
// Built and run by scripts/check-portable.
#include "CLuaShim.h"
#include <lauxlib.h>
#include <lualib.h>
#include <stdio.h>
#include <string.h>

static int stops(lua_State *L, const char *chunk, int64_t limit_ms) {
  int64_t start = mf_now_ns();
  if (luaL_loadstring(L, chunk) != LUA_OK) { printf("load: %s\n", lua_tostring(L, -1)); return 0; }
  int status = mf_pcall(L, 0, 0, limit_ms);
  double ms = (double)(mf_now_ns() - start) / 1e6;
  const char *message = status == LUA_OK ? "(returned)" : lua_tostring(L, -1);
  int ok = status != LUA_OK && message && strstr(message, "time limit of") && ms < limit_ms + 2000;
  int first_line = message ? (int)strcspn(message, "\n") : 1;
  printf("%s %.40s: %.*s after %.0f ms\n", ok ? "ok  " : "FAIL", chunk, first_line, message ? message : "?", ms);
  lua_settop(L, 0);
  return ok;
}

int main(void) {
  mf_budget *budget = mf_budget_new(0);
  if (!budget) return 1;
  lua_State *L = mf_newstate(budget);
  if (!L) return 1;
  luaL_openlibs(L);
  if (mf_install_watchdog(L) != LUA_OK) { printf("install: %s\n", lua_tostring(L, -1)); return 1; }
  int passed = stops(L, "while true do end", 100);
  passed += stops(L, "while true do pcall(function() while true do end end) end", 100);
  passed += stops(L, "local s = string.rep('a', 20000) .. 'b' while true do s:find('.-.-.-.-b') end", 150);
  mf_close_state(L, 1000);
  mf_budget_free(budget);
  printf("%d passed, %d failed\n", passed, 3 - passed);
  return passed == 3 ? 0 : 1;
}
