// Building values: Swift's values pushed as Lua values in one protected call, and the
// markers of mf.array() and mf.object() that say how a table encodes as JSON (read
// raw, never raising). Calls no other file.
#include "internal.h"
#include <string.h>

// Registry keys are addresses (lua_rawgetp): reading them never allocates.
static const char ARRAY_MT_KEY = 0;

// The array marker is one metatable for every array of the state, every plugin's:
// `__metatable` keeps it from scripts (getmetatable gives the string, setmetatable
// refuses), or one plugin could give every array an __index, a __newindex or a
// __gc. The shim reads and sets it with lua_getmetatable and lua_setmetatable, which
// `__metatable` does not stop; the host's Lua code with the functions below.
void mf_push_array_mt(lua_State *L) {
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &ARRAY_MT_KEY) == LUA_TNIL) {
    lua_pop(L, 1);
    lua_createtable(L, 0, 2);
    lua_pushliteral(L, "moonflow.array");
    lua_setfield(L, -2, "__name");
    lua_pushliteral(L, "moonflow.array");
    lua_setfield(L, -2, "__metatable");
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &ARRAY_MT_KEY);
  }
}

/// getmetatable(v) past `__metatable`: the metatable itself, or nil.
static int raw_getmetatable(lua_State *L) {
  luaL_checkany(L, 1);
  if (!lua_getmetatable(L, 1)) lua_pushnil(L);
  return 1;
}

/// setmetatable(t, mt) past `__metatable` (mt nil removes it); returns t.
static int raw_setmetatable(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  int t = lua_type(L, 2);
  luaL_argexpected(L, t == LUA_TNIL || t == LUA_TTABLE, 2, "nil or table");
  lua_settop(L, 2);
  lua_setmetatable(L, 1);
  return 1;
}

void mf_push_raw_metatable_functions(lua_State *L) {
  lua_pushcfunction(L, raw_getmetatable);
  lua_pushcfunction(L, raw_setmetatable);
}

static int make_array_mt(lua_State *L) {
  mf_push_array_mt(L);
  return 0;
}

int mf_mark_json_array(lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  if (lua_getmetatable(L, idx)) { lua_pop(L, 1); return 0; }
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &ARRAY_MT_KEY) == LUA_TNIL) {
    // Made once, in a protected call (it allocates): never raised into the caller.
    lua_pop(L, 1);
    lua_pushcfunction(L, make_array_mt);
    if (lua_pcall(L, 0, 0, 0) != LUA_OK) { lua_pop(L, 1); return 0; }
    lua_rawgetp(L, LUA_REGISTRYINDEX, &ARRAY_MT_KEY);
  }
  lua_setmetatable(L, idx);
  return 1;
}

int mf_is_json_array(lua_State *L, int idx) {
  if (!lua_getmetatable(L, idx)) return 0;
  lua_rawgetp(L, LUA_REGISTRYINDEX, &ARRAY_MT_KEY);
  int same = lua_rawequal(L, -1, -2);
  lua_pop(L, 2);
  return same;
}

int mf_metatable_kind(lua_State *L, int idx) {
  if (!lua_getmetatable(L, idx)) return 0;
  // A marker of mf.array()/mf.object(): a metatable holding only __name = "moonflow.array"|"moonflow.object".
  int kind = 3;
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &ARRAY_MT_KEY) != LUA_TNIL && lua_rawequal(L, -1, -2)) kind = 1;
  lua_pop(L, 1);
  if (kind == 3) {
    // ... and `__metatable` = "moonflow.object" too, as mf.object() marks (kept from scripts).
    int fields = 0, named = 0;
    lua_pushnil(L);
    while (lua_next(L, -2) != 0) {
      fields++;
      if (lua_type(L, -2) == LUA_TSTRING && lua_type(L, -1) == LUA_TSTRING &&
          strcmp(lua_tostring(L, -1), "moonflow.object") == 0) {
        const char *key = lua_tostring(L, -2);
        if (strcmp(key, "__name") == 0) named |= 1;
        else if (strcmp(key, "__metatable") == 0) named |= 2;
      }
      lua_pop(L, 1);
    }
    if ((named & 1) && fields == 1 + (named >> 1)) kind = 2;
  }
  lua_pop(L, 1);
  return kind;
}

int mf_json_kind(lua_State *L, int idx) {
  if (!lua_getmetatable(L, idx)) return 0;
  lua_rawgetp(L, LUA_REGISTRYINDEX, &ARRAY_MT_KEY);
  int same = lua_rawequal(L, -1, -2);
  lua_pop(L, 2);
  return same ? 1 : 2;
}

// What push_ops_k works through, and how far it got (read back when it raised).
typedef struct {
  const mf_op *ops;
  int count;
  int done;  // ops finished; an MF_OP_OBJECT below it is owned by its userdata's __gc
} push_job;

static int push_ops_k(lua_State *L) {
  push_job *job = (push_job *)lua_touserdata(L, 1);
  const mf_op *ops = job->ops;
  int count = job->count;
  int base = lua_gettop(L);
  // Each op grows the stack by at most 2 (an object's userdata and metatable) and
  // only nesting keeps it grown: the stack is checked when it nears the room made.
  int room = base + 32;
  luaL_checkstack(L, 32, "value too deeply nested");
  for (int k = 0; k < count; k++) {
    const mf_op *op = &ops[k];
    if (lua_gettop(L) + 4 > room) {
      luaL_checkstack(L, 36, "value too deeply nested");
      room = lua_gettop(L) + 36;
    }
    switch (op->code) {
      case MF_OP_NIL: lua_pushnil(L); break;
      case MF_OP_BOOL: lua_pushboolean(L, (int)op->i); break;
      case MF_OP_INT: lua_pushinteger(L, (lua_Integer)op->i); break;
      case MF_OP_NUM: lua_pushnumber(L, op->d); break;
      case MF_OP_STR: lua_pushlstring(L, op->s, op->len); break;
      case MF_OP_TABLE: lua_createtable(L, op->a, (int)op->i); break;
      case MF_OP_SET: lua_rawset(L, -3); break;
      case MF_OP_SETI: lua_rawseti(L, -2, op->i); break;
      case MF_OP_REF: lua_rawgeti(L, LUA_REGISTRYINDEX, op->i); break;
      case MF_OP_ARRAYMT: mf_push_array_mt(L); lua_setmetatable(L, -2); break;
      case MF_OP_OBJECT: {
        void **slot = (void **)lua_newuserdatauv(L, sizeof(void *), 0);
        *slot = (void *)op->s;
        lua_rawgeti(L, LUA_REGISTRYINDEX, op->i);
        lua_setmetatable(L, -2);
        break;
      }
      default: return luaL_error(L, "moonflow: bad push opcode %d", op->code);
    }
    job->done = k + 1;
  }
  return lua_gettop(L) - base;
}

int mf_push_ops(lua_State *L, const mf_op *ops, int count, int *pushed, int *done) {
  int top = lua_gettop(L);
  push_job job = { ops, count, 0 };
  *pushed = 0;
  if (done) *done = 0;
  MF_NEED_ROOM(L, 8, 0);
  lua_pushcfunction(L, push_ops_k);
  lua_pushlightuserdata(L, &job);
  int status = lua_pcall(L, 1, LUA_MULTRET, 0);
  *pushed = status == LUA_OK ? lua_gettop(L) - top : 0;
  if (done) *done = job.done;
  return status;
}
