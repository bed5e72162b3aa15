// The trampoline: the Lua C functions and userdata that stand for Swift functions
// and objects. They call Swift through the callbacks it sets and raise on the status
// it returns, so Swift never raises; and where such a call came from. Calls callouts.c
// (the host told before a call into Swift, which may block).
#include "internal.h"
#include <stdio.h>

static mf_swift_call_fn swift_call;
static mf_swift_release_fn swift_release;

void mf_set_swift_callbacks(mf_swift_call_fn call, mf_swift_release_fn release) {
  swift_call = call;
  swift_release = release;
}

static const char *FUNCTION_MT = "moonflow.swiftfunction";

static int box_gc(lua_State *L) {
  void **slot = (void **)lua_touserdata(L, 1);
  if (slot && *slot) { swift_release(*slot); *slot = NULL; }
  return 0;
}

static int trampoline(lua_State *L) {
  void **slot = (void **)lua_touserdata(L, lua_upvalueindex(1));
  if (!slot || !*slot) return luaL_error(L, "moonflow: Swift function already released");
  mf_before_callout(L);  // it may block: the host finishes what it keeps in Lua first
  int n = swift_call(*slot, L);  // Swift returns before anything raises
  if (n == MF_SWIFT_RAISE_WHERE) {  // a message: prefix the caller's file:line, as luaL_error does
    luaL_where(L, 1);
    lua_insert(L, -2);
    lua_concat(L, 2);
    return lua_error(L);
  }
  if (n == MF_SWIFT_RAISE) return lua_error(L);
  if (n == MF_SWIFT_RAISE_NOROOM) {
    lua_settop(L, 0);  // frees this call's slots (at least LUA_MINSTACK) for the message
    return luaL_error(L, "not enough memory (no room on the Lua stack)");
  }
  return n;
}

static int push_swift_function_k(lua_State *L) {
  void *box = lua_touserdata(L, 1);
  lua_settop(L, 0);
  void **slot = (void **)lua_newuserdatauv(L, sizeof(void *), 0);
  *slot = NULL;
  if (luaL_newmetatable(L, FUNCTION_MT)) {
    lua_pushcfunction(L, box_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushliteral(L, "swift function");
    lua_setfield(L, -2, "__name");
  }
  lua_setmetatable(L, -2);
  lua_pushcclosure(L, trampoline, 1);  // may fail on memory: then the box is still the caller's
  *slot = box;  // from here the closure's userdata owns the box (nothing below can fail)
  return 1;
}

int mf_push_swift_function(lua_State *L, void *box) {
  MF_NEED_ROOM(L, 2, 0);
  lua_pushcfunction(L, push_swift_function_k);
  lua_pushlightuserdata(L, box);
  return lua_pcall(L, 1, 1, 0);
}

// Set in the metatables mf_new_object_metatable makes, so that mf_object_box takes
// only a Swift object's userdata for a box.
static const char OBJECT_TAG_KEY = 0;

static int new_object_mt_k(lua_State *L) {
  const char *name = (const char *)lua_touserdata(L, 1);
  int *out = (int *)lua_touserdata(L, 2);
  // stack: name, out, index-table
  lua_newtable(L);                 // mt
  lua_pushvalue(L, 3);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, box_gc);
  lua_setfield(L, -2, "__gc");
  lua_pushstring(L, name);
  lua_setfield(L, -2, "__name");
  lua_pushboolean(L, 1);
  lua_rawsetp(L, -2, &OBJECT_TAG_KEY);
  lua_pushboolean(L, 0);
  lua_setfield(L, -2, "__metatable");
  *out = luaL_ref(L, LUA_REGISTRYINDEX);
  return 0;
}

int mf_new_object_metatable(lua_State *L, const char *name, int *outRef) {
  MF_NEED_ROOM(L, 3, 1);
  lua_pushcfunction(L, new_object_mt_k);
  lua_insert(L, -2);
  lua_pushlightuserdata(L, (void *)name);
  lua_insert(L, -2);
  lua_pushlightuserdata(L, outRef);
  lua_insert(L, -2);
  return lua_pcall(L, 3, 0, 0);
}

void *mf_object_box(lua_State *L, int idx) {
  if (lua_type(L, idx) != LUA_TUSERDATA) return NULL;
  if (!lua_getmetatable(L, idx)) return NULL;
  lua_rawgetp(L, -1, &OBJECT_TAG_KEY);
  int tagged = lua_toboolean(L, -1);
  lua_pop(L, 2);
  if (!tagged) return NULL;
  void **slot = (void **)lua_touserdata(L, idx);
  return slot ? *slot : NULL;
}

// Where the running Swift function was called from, and where a Lua function it
// was handed is defined (read from debug information, without allocating).
int mf_where(lua_State *L, int level, char *buf, size_t size) {
  lua_Debug ar;
  if (!lua_getstack(L, level, &ar)) return 0;
  if (!lua_getinfo(L, "Sl", &ar)) return 0;  // "S" and "l" fill fixed fields: no allocation
  if (ar.currentline <= 0) return 0;
  snprintf(buf, size, "%s:%d", ar.short_src, ar.currentline);
  return 1;
}

int mf_function_where(lua_State *L, int idx, char *buf, size_t size) {
  if (lua_type(L, idx) != LUA_TFUNCTION) return 0;
  lua_Debug ar;
  lua_pushvalue(L, idx);  // lua_getinfo(">") pops it
  if (!lua_getinfo(L, ">S", &ar)) return 0;  // "S" fills fixed fields: no allocation
  if (ar.linedefined <= 0) return 0;        // a C function or a main chunk
  snprintf(buf, size, "%s:%d", ar.short_src, ar.linedefined);
  return 1;
}
