// What `moonflow exec` needs to behave as the standalone `lua5.4`: loading a
// file by Lua's rules and calling a main chunk as lua.c does. Calls only
// watchdog.c (to arm the time limit around the chunk) and messages.c.
#include "internal.h"
#include <string.h>

// A script file loads by Lua's own rules (a first line starting with `#` and a
// UTF-8 byte-order mark are skipped, NULL reads standard input), and a main chunk
// is called from a C frame with lua.c's message handler, so that tracebacks and
// error objects print as lua5.4 prints them.

static int loadfile_k(lua_State *L) {
  const char *path = (const char *)lua_touserdata(L, 1);
  const char *mode = (const char *)lua_touserdata(L, 2);
  lua_settop(L, 0);
  int status = luaL_loadfilex(L, path, mode);
  lua_pushinteger(L, status);
  return 2;
}

int mf_loadfile(lua_State *L, const char *path, const char *mode) {
  MF_NEED_ROOM(L, 3, 0);
  lua_pushcfunction(L, loadfile_k);
  lua_pushlightuserdata(L, (void *)path);
  lua_pushlightuserdata(L, (void *)mode);
  int status = lua_pcall(L, 2, 2, 0);
  if (status != LUA_OK) return status;  // out of memory: the message is on top
  status = (int)lua_tointeger(L, -1);
  lua_pop(L, 1);
  return status;
}

/// lua.c's message handler: a string gets the traceback; an object with
/// `__tostring` becomes that string alone; anything else is described.
static int standalone_msgh(lua_State *L) {
  size_t len = 0;
  const char *msg = lua_tolstring(L, 1, &len);
  if (msg == NULL) {
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) {
      msg = lua_tolstring(L, -1, &len);
      mf_bounded_message(L, msg, len);  // the string alone, as lua.c gives it (cut when huge)
      return 1;
    }
    msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    len = strlen(msg);
  }
  luaL_traceback(L, L, mf_bounded_message(L, msg, len), 1);
  return 1;
}

/// The C frame below a main chunk (the traceback's last `[C]: in ?`).
/// Stack: the function and its arguments. Returns nothing, or the message.
static int main_k(lua_State *L) {
  int *status = (int *)lua_touserdata(L, lua_upvalueindex(1));
  int nargs = lua_gettop(L) - 1;
  lua_pushcfunction(L, standalone_msgh);
  lua_insert(L, 1);
  *status = lua_pcall(L, nargs, 0, 1);
  return *status == LUA_OK ? 0 : 1;
}

int mf_docall(lua_State *L, int nargs, int64_t limit_ms) {
  int status = LUA_OK;
  int base = lua_gettop(L) - nargs;
  MF_NEED_ROOM(L, 4, nargs + 1);
  lua_pushlightuserdata(L, &status);
  lua_pushcclosure(L, main_k, 1);  // cannot fail for lack of stack: checked above
  lua_insert(L, base);
  int armed = mf_arm(L, limit_ms);
  int outer = lua_pcall(L, nargs + 1, LUA_MULTRET, 0);
  int stopped = armed && mf_deadline_passed(L);
  mf_disarm(L, armed);
  if (outer != LUA_OK) return outer;
  if (status == LUA_OK && stopped) {
    lua_settop(L, base - 1);
    mf_push_timeout_message(L);
    return LUA_ERRRUN;
  }
  return status;
}
