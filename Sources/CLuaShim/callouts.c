// Before Lua calls out into code that may block (a Swift function, and under the trusted
// profile os.execute and the io library's reads, writes, opens and closes; pipes.c's
// io.popen calls it itself), the host is
// told, once, when it noted that it keeps work in Lua that only it can finish: a feature's
// writes that wait in Lua (dispatch.lua's pending writes). A call that blocks there past its
// limit leaves the state stuck, and nothing may go into a stuck state again: what waited in
// it would be lost. Calls no other file.
#include "internal.h"

static const char CALLOUT_KEY = 0;

void mf_before_callout(lua_State *L) {
  mf_budget *b = mf_budget_of(L);
  if (!b->callout_wanted || b->in_callout) return;
  b->callout_wanted = 0;
  if (!lua_checkstack(L, 2)) return;
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &CALLOUT_KEY) != LUA_TFUNCTION) {
    lua_pop(L, 1);
    return;
  }
  b->in_callout = 1;
  if (lua_pcall(L, 0, 0, 0) != LUA_OK) lua_pop(L, 1);  // what the host keeps stays for later
  b->in_callout = 0;
}

int mf_register_callout(lua_State *L) {
  // stack: the function (or nil)
  lua_rawsetp(L, LUA_REGISTRYINDEX, &CALLOUT_KEY);
  return 1;
}

void mf_want_callout(lua_State *L) { mf_budget_of(L)->callout_wanted = 1; }

/// A library function (upvalue 1), after the host's callout, run in this frame so that
/// its errors and tracebacks read as Lua's own.
static int callout_first(lua_State *L) {
  mf_before_callout(L);
  return mf_tail_original(L);
}

static void wrap_each(lua_State *L, int lib, const char *const *names) {
  for (; *names; names++) {
    lua_getfield(L, lib, *names);
    if (mf_is_plain_cfunction(L, -1)) {
      lua_pushcclosure(L, callout_first, 1);
      lua_setfield(L, lib, *names);
    } else {
      lua_pop(L, 1);
    }
  }
}

void mf_install_callouts(lua_State *L) {
  static const char *const os_names[] = { "execute", NULL };
  static const char *const io_names[] = { "read", "lines", "write", "open", "close", "input", "output", NULL };
  static const char *const file_names[] = { "read", "lines", "write", "close", "flush", "seek", NULL };
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  if (lua_getfield(L, -1, LUA_OSLIBNAME) == LUA_TTABLE) wrap_each(L, lua_gettop(L), os_names);
  lua_pop(L, 1);
  if (lua_getfield(L, -1, LUA_IOLIBNAME) == LUA_TTABLE) wrap_each(L, lua_gettop(L), io_names);
  lua_pop(L, 2);
  // The file methods: the handles' metatable's __index table.
  if (luaL_getmetatable(L, LUA_FILEHANDLE) == LUA_TTABLE) {
    if (lua_getfield(L, -1, "__index") == LUA_TTABLE) wrap_each(L, lua_gettop(L), file_names);
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
}
