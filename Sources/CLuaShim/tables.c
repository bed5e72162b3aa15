// Table access for the runtime: raw reads and writes, globals and package.preload,
// each inside a protected call (interning a key or growing a table allocates).
// Calls no other file.
#include "internal.h"

static int rawset_k(lua_State *L) {
  // stack: t, k, v
  lua_rawset(L, 1);
  return 0;
}

int mf_rawset(lua_State *L, int tidx) {
  MF_NEED_ROOM(L, 4, 2);
  tidx = lua_absindex(L, tidx);
  lua_pushcfunction(L, rawset_k);
  lua_pushvalue(L, tidx);
  lua_pushvalue(L, -4);
  lua_pushvalue(L, -4);
  int status = lua_pcall(L, 3, 0, 0);
  if (status == LUA_OK) lua_pop(L, 2); else lua_remove(L, -2), lua_remove(L, -2);
  return status;
}

static int rawgetfield_k(lua_State *L) {
  const char *key = (const char *)lua_touserdata(L, 2);
  lua_pushstring(L, key);
  lua_rawget(L, 1);
  return 1;
}

int mf_rawgetfield(lua_State *L, int tidx, const char *key) {
  MF_NEED_ROOM(L, 3, 0);
  tidx = lua_absindex(L, tidx);
  lua_pushcfunction(L, rawgetfield_k);
  lua_pushvalue(L, tidx);
  lua_pushlightuserdata(L, (void *)key);
  return lua_pcall(L, 2, 1, 0);
}

static int setglobal_k(lua_State *L) {
  // stack: value, name
  lua_pushvalue(L, 1);
  lua_setglobal(L, (const char *)lua_touserdata(L, 2));
  return 0;
}

int mf_setglobal(lua_State *L, const char *name) {
  MF_NEED_ROOM(L, 2, 1);
  lua_pushcfunction(L, setglobal_k);
  lua_insert(L, -2);
  lua_pushlightuserdata(L, (void *)name);
  return lua_pcall(L, 2, 0, 0);
}

static int getglobal_k(lua_State *L) {
  lua_getglobal(L, (const char *)lua_touserdata(L, 1));
  return 1;
}

int mf_getglobal(lua_State *L, const char *name) {
  MF_NEED_ROOM(L, 2, 0);
  lua_pushcfunction(L, getglobal_k);
  lua_pushlightuserdata(L, (void *)name);
  return lua_pcall(L, 1, 1, 0);
}

static int preload_k(lua_State *L) {
  // stack: fn, name
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  lua_pushvalue(L, 1);
  lua_setfield(L, -2, (const char *)lua_touserdata(L, 2));
  return 0;
}

int mf_preload(lua_State *L, const char *name) {
  MF_NEED_ROOM(L, 2, 1);
  lua_pushcfunction(L, preload_k);
  lua_insert(L, -2);
  lua_pushlightuserdata(L, (void *)name);
  return lua_pcall(L, 2, 0, 0);
}
