// The flat check of a mutation in C, for the host's own Lua code (dispatch.lua's step):
// the same answers as LuaKit's FlatShapes.matches, without leaving Lua. Calls no other file.
#include "internal.h"
#include <math.h>
#include <string.h>

// Field types as FlatShapes.luaTable codes them (negative: optional).
enum { FT_STRING = 1, FT_INTEGER, FT_NUMBER, FT_BOOLEAN, FT_TABLE, FT_ANY };

/// `flat(shapes, m)`: whether `m` is a table without a metatable whose string `type`
/// names a shape of `shapes` (`{ [type] = { { field = code }, required } }`), whose
/// other keys are that shape's fields, each holding a string, boolean or finite number
/// of its type, with every required field there. Raw reads only; runs inside the
/// protected call of its Lua caller. Its upvalue is the string "type", interned once.
static int flat_k(lua_State *L) {
  lua_settop(L, 2);
  luaL_checkstack(L, 6, NULL);
  if (lua_type(L, 1) != LUA_TTABLE || lua_type(L, 2) != LUA_TTABLE || lua_getmetatable(L, 2)) goto refused;
  lua_pushvalue(L, lua_upvalueindex(1));
  if (lua_rawget(L, 2) != LUA_TSTRING) goto refused;
  if (lua_rawget(L, 1) != LUA_TTABLE) goto refused;   // 3: the shape
  lua_rawgeti(L, 3, 1);                                 // 4: its fields
  lua_rawgeti(L, 3, 2);
  lua_Integer required = lua_tointeger(L, -1), seen = 0;
  lua_pop(L, 1);
  if (lua_type(L, 4) != LUA_TTABLE) goto refused;
  lua_pushnil(L);
  while (lua_next(L, 2)) {                              // 5: key, 6: value
    if (lua_type(L, 5) != LUA_TSTRING) goto refused;
    size_t n = 0;
    const char *key = lua_tolstring(L, 5, &n);
    if (n == 4 && memcmp(key, "type", 4) == 0) { lua_pop(L, 1); continue; }
    lua_pushvalue(L, 5);
    lua_Integer code = lua_rawget(L, 4) == LUA_TNUMBER ? lua_tointeger(L, -1) : 0;
    lua_pop(L, 1);
    int optional = code < 0;
    if (optional) code = -code;
    int fits = 0;
    switch (lua_type(L, 6)) {
    case LUA_TSTRING: fits = code == FT_STRING || code == FT_ANY; break;
    case LUA_TBOOLEAN: fits = code == FT_BOOLEAN || code == FT_ANY; break;
    case LUA_TNUMBER:
      if (lua_isinteger(L, 6)) fits = code == FT_INTEGER || code == FT_NUMBER || code == FT_ANY;
      else fits = isfinite(lua_tonumber(L, 6)) && (code == FT_NUMBER || code == FT_ANY);
      break;
    default: break;   // tables (and anything else) are left to the full check
    }
    if (!fits) goto refused;
    if (!optional) seen++;
    lua_pop(L, 1);
  }
  lua_pushboolean(L, seen == required);
  return 1;
refused:
  lua_pushboolean(L, 0);
  return 1;
}

static int make_flat_k(lua_State *L) {
  lua_pushliteral(L, "type");
  lua_pushcclosure(L, flat_k, 1);
  return 1;
}

int mf_push_flat_check(lua_State *L) {
  MF_NEED_ROOM(L, 2, 0);
  lua_pushcfunction(L, make_flat_k);
  return lua_pcall(L, 0, 1, 0);
}
