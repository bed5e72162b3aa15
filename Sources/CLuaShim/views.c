// The views of the state in C: the write views' two hot metamethods, the read-only
// views' closer, which table a view shows, and the raw functions that refuse a view.
// Calls no other file.
#include <math.h>
#include <string.h>
#include "internal.h"

// The write views' (what `reduce` gets) two hot metamethods in C. A view is an
// empty table whose metatable sends every read and write here; the table it
// shows is `targets[view]`. Reading through a view costs one C call instead of
// a Lua function calling rawget and type; writing costs one C call that writes
// raw and logs the write for the rollback and for the snapshot. The rest of
// the views (places, sharing, finishing, undo) stays in Lua (LuaDispatch):
// these keep its counts in `log[0]` and `stored[0]`.

enum { UP_TARGETS = 1, UP_LOG = 2, UP_STORED = 3, UP_WRAP = 4, UP_CHECK = 5 };

/// Strict access: a string key found nil (a read) or not there yet (a write) is shown to
/// the Lua `check(view, key, writing)`, which raises for a field the declared state lacks.
/// Only then: a read of a field that holds a value costs nothing more.
static void check_key(lua_State *L, int writing) {
  if (lua_type(L, 2) != LUA_TSTRING) return;
  lua_pushvalue(L, lua_upvalueindex(UP_CHECK));
  lua_pushvalue(L, 1);
  lua_pushvalue(L, 2);
  lua_pushboolean(L, writing);
  lua_call(L, 3, 0);
}

/// Appends the three values on top (popped) to the list at upvalue `up`; its count is at [0].
static void append3(lua_State *L, int up) {
  int list = lua_upvalueindex(up);
  lua_rawgeti(L, list, 0);
  lua_Integer n = lua_tointeger(L, -1);
  lua_pop(L, 1);
  lua_rawseti(L, list, n + 3);
  lua_rawseti(L, list, n + 2);
  lua_rawseti(L, list, n + 1);
  lua_pushinteger(L, n + 3);
  lua_rawseti(L, list, 0);
}

/// The table the view at 1 shows, pushed; raises for anything that is not a view, and
/// for a view used outside the reduce it was handed out in (kept after its call: `log[-1]`
/// is the running reduce's number, false between reduces, and `log[-2][view]` the number
/// of the reduce that last handed the view out).
static void push_target(lua_State *L) {
  int top = lua_gettop(L);
  lua_rawgeti(L, lua_upvalueindex(UP_LOG), -1);
  int live = lua_toboolean(L, -1);
  if (live && lua_rawgeti(L, lua_upvalueindex(UP_LOG), -2) == LUA_TTABLE) {
    lua_pushvalue(L, 1);
    lua_rawget(L, -2);
    live = lua_rawequal(L, -1, -3);
  }
  lua_settop(L, top);
  if (!live) {
    const char *field = "?";
    if (lua_type(L, 2) == LUA_TSTRING || lua_type(L, 2) == LUA_TNUMBER) {
      lua_pushvalue(L, 2);
      field = lua_tostring(L, -1);
    }
    luaL_error(L, "%s: this view of the state was kept after its reduce call returned; a view is valid "
               "only during the call (keep values, not the state's tables)", field);
  }
  lua_pushvalue(L, 1);
  if (lua_rawget(L, lua_upvalueindex(UP_TARGETS)) != LUA_TTABLE)
    luaL_error(L, "the state view is no longer valid: keep state tables only within reduce");
}

/// __index(view, key): the value raw; a table as its own view (made by the Lua `wrap(t, view, key)`).
static int view_index(lua_State *L) {
  lua_settop(L, 2);
  push_target(L);                  // 3: target
  lua_pushvalue(L, 2);
  int t = lua_rawget(L, 3);        // 4: the value
  if (t != LUA_TTABLE) {
    if (t == LUA_TNIL) check_key(L, 0);
    return 1;
  }
  lua_pushvalue(L, lua_upvalueindex(UP_WRAP));
  lua_insert(L, 4);
  lua_pushvalue(L, 1);
  lua_pushvalue(L, 2);
  lua_call(L, 3, 1);
  return 1;
}

/// __newindex(view, key, value): a view stored unwraps to its table, and a table
/// stored is noted (table, view, key); the write is raw and logged (view, key, old).
static int view_newindex(lua_State *L) {
  lua_settop(L, 3);
  push_target(L);                  // 4: target
  if (lua_type(L, 3) == LUA_TTABLE) {
    lua_pushvalue(L, 3);
    if (lua_rawget(L, lua_upvalueindex(UP_TARGETS)) == LUA_TTABLE) lua_replace(L, 3);
    else lua_pop(L, 1);
    lua_pushvalue(L, 3);
    lua_pushvalue(L, 1);
    lua_pushvalue(L, 2);
    append3(L, UP_STORED);
  }
  lua_pushvalue(L, 2);
  if (lua_rawget(L, 4) == LUA_TNIL) check_key(L, 1);  // 5: old
  lua_pushvalue(L, 2);
  lua_pushvalue(L, 3);
  lua_rawset(L, 4);
  lua_pushvalue(L, 1);
  lua_pushvalue(L, 2);
  lua_pushvalue(L, 5);
  append3(L, UP_LOG);
  return 0;
}

static int install_k(lua_State *L) {
  // 1 metatable, 2 targets, 3 log, 4 stored, 5 wrap, 6 check
  for (int i = 2; i <= 6; i++) lua_pushvalue(L, i);
  lua_pushcclosure(L, view_index, 5);
  lua_setfield(L, 1, "__index");
  for (int i = 2; i <= 6; i++) lua_pushvalue(L, i);
  lua_pushcclosure(L, view_newindex, 5);
  lua_setfield(L, 1, "__newindex");
  lua_pushinteger(L, 0);
  lua_rawseti(L, 3, 0);
  lua_pushinteger(L, 0);
  lua_rawseti(L, 4, 0);
  return 0;
}

int mf_install_write_view_access(lua_State *L) {
  MF_NEED_ROOM(L, 2, 6);
  lua_pushcfunction(L, install_k);
  lua_insert(L, -7);
  return lua_pcall(L, 6, 0, 0);
}

// `params(f)`: f's named parameters and whether it takes `...`. lua_getinfo with ">u"
// reads the prototype only (no allocation); a C function or anything callable that is
// not a Lua function reports 0, true, so that it is handed everything.
static int params_k(lua_State *L) {
  lua_settop(L, 1);
  if (lua_type(L, 1) != LUA_TFUNCTION || lua_iscfunction(L, 1)) {
    lua_pushinteger(L, 0);
    lua_pushboolean(L, 1);
    return 2;
  }
  lua_Debug ar;
  lua_getinfo(L, ">u", &ar);  // pops the function
  lua_pushinteger(L, ar.nparams);
  lua_pushboolean(L, ar.isvararg);
  return 2;
}

void mf_push_params(lua_State *L) { lua_pushcfunction(L, params_k); }

// `fits(shape, k, v)`: whether the value `v`, written at key `k` of a table whose view
// shape is `shape` (nil or false: not looked inside), may wait in Lua (dispatch.lua's
// `finish`): a boolean, a string or a finite number, at a string or integer key, of the
// type the shape's `t` gives there (a record's { field = code }, a list's or map's item
// code: "string", "integer", "number", "boolean", "table", "any" or an enum's
// { name = true }). Reads the shape raw; raises only on memory (interning a field name),
// inside its caller's protected call.
static int fits_k(lua_State *L) {
  lua_settop(L, 3);
  int tv = lua_type(L, 3);
  if (tv == LUA_TNUMBER) {
    if (!lua_isinteger(L, 3)) {
      lua_Number d = lua_tonumber(L, 3);
      if (d != d || d == HUGE_VAL || d == -HUGE_VAL) goto no;
    }
  } else if (tv != LUA_TSTRING && tv != LUA_TBOOLEAN) {
    goto no;
  }
  int tk = lua_type(L, 2);
  if (tk == LUA_TNUMBER ? !lua_isinteger(L, 2) : tk != LUA_TSTRING) goto no;
  if (lua_type(L, 1) != LUA_TTABLE) goto yes;
  lua_pushliteral(L, "t");
  int code = lua_rawget(L, 1);  // 4: code, or a record's codes
  lua_pushliteral(L, "r");
  if (lua_rawget(L, 1) != LUA_TNIL) {  // 5: a record
    if (code != LUA_TTABLE || tk != LUA_TSTRING) goto no;
    lua_pushvalue(L, 2);
    code = lua_rawget(L, 4);
  } else {
    lua_pushliteral(L, "l");
    int list = lua_rawget(L, 1) != LUA_TNIL;
    if (list ? tk != LUA_TNUMBER : tk != LUA_TSTRING) goto no;
    lua_pushvalue(L, 4);
  }
  // The code is at the top.
  if (code == LUA_TTABLE) {  // an enum's names
    if (tv != LUA_TSTRING) goto no;
    lua_pushvalue(L, 3);
    if (lua_rawget(L, -2) != LUA_TBOOLEAN || !lua_toboolean(L, -1)) goto no;
    goto yes;
  }
  if (code != LUA_TSTRING) goto no;
  switch (lua_tostring(L, -1)[0]) {
  case 'a': goto yes;                                              // any
  case 'i': if (tv == LUA_TNUMBER && lua_isinteger(L, 3)) goto yes; goto no;  // integer
  case 'n': if (tv == LUA_TNUMBER) goto yes; goto no;              // number
  case 's': if (tv == LUA_TSTRING) goto yes; goto no;              // string
  case 'b': if (tv == LUA_TBOOLEAN) goto yes; goto no;             // boolean
  default: goto no;                                                // table
  }
yes:
  lua_pushboolean(L, 1);
  return 1;
no:
  lua_pushboolean(L, 0);
  return 1;
}

void mf_push_fits(lua_State *L) { lua_pushcfunction(L, fits_k); }

// The read-only views' validity: `count[1]` is how many handle and effect calls
// that were handed a view are running; a to-be-closed value whose __close (this)
// counts one down ends each, even when the call fails or is stopped.
int mf_view_close(lua_State *L) {
  lua_rawgeti(L, lua_upvalueindex(1), 1);
  lua_Integer n = lua_tointeger(L, -1);
  lua_pushinteger(L, n > 0 ? n - 1 : 0);
  lua_rawseti(L, lua_upvalueindex(1), 1);
  return 0;
}

static int install_close_k(lua_State *L) {
  // 1 the closer's metatable, 2 the count table
  lua_pushvalue(L, 2);
  lua_pushcclosure(L, mf_view_close, 1);
  lua_setfield(L, 1, "__close");
  return 0;
}

int mf_install_view_close(lua_State *L) {
  MF_NEED_ROOM(L, 2, 2);
  lua_pushcfunction(L, install_close_k);
  lua_insert(L, -3);
  return lua_pcall(L, 2, 0, 0);
}

// Which table a view shows, for the JSON writer: the views' metatables and the weak
// tables from each view to the table it shows, kept under registry keys that are
// addresses (reading them never allocates). Read-only views are what `handle` and
// effect handlers get; write views what `reduce` gets.
static const char READONLY_MT_KEY = 0;
static const char READONLY_TARGETS_KEY = 0;
static const char WRITE_MT_KEY = 0;
static const char WRITE_TARGETS_KEY = 0;

int mf_register_readonly(lua_State *L) {
  // stack: mt, targets
  if (!lua_checkstack(L, 2)) return 0;
  lua_rawsetp(L, LUA_REGISTRYINDEX, &READONLY_TARGETS_KEY);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &READONLY_MT_KEY);
  return 1;
}

int mf_register_write_views(lua_State *L) {
  // stack: mt, targets
  if (!lua_checkstack(L, 2)) return 0;
  lua_rawsetp(L, LUA_REGISTRYINDEX, &WRITE_TARGETS_KEY);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &WRITE_MT_KEY);
  return 1;
}

/* Whether the metatable on top (popped) is the one registered under `mt_key`. */
static int is_view_metatable(lua_State *L, const char *mt_key) {
  int is = lua_rawgetp(L, LUA_REGISTRYINDEX, mt_key) != LUA_TNIL && lua_rawequal(L, -1, -2);
  lua_pop(L, 1);
  return is;
}

int mf_readonly_target(lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  if (!lua_checkstack(L, 3)) return 0;
  if (!lua_getmetatable(L, idx)) return 0;
  const char *targets = NULL;
  if (is_view_metatable(L, &READONLY_MT_KEY)) targets = &READONLY_TARGETS_KEY;
  else if (is_view_metatable(L, &WRITE_MT_KEY)) targets = &WRITE_TARGETS_KEY;
  lua_pop(L, 1);
  if (targets == NULL) return 0;
  lua_rawgetp(L, LUA_REGISTRYINDEX, targets);
  lua_pushvalue(L, idx);
  lua_rawget(L, -2);
  lua_remove(L, -2);
  if (lua_type(L, -1) != LUA_TTABLE) { lua_pop(L, 1); return 0; }
  return 1;
}

// MARK: - Raw access refuses a view

// rawget, rawset and rawlen of every state replace the base library's: on a view
// they call the refuser the host registered (it raises, naming the field), since a
// raw write would land in the empty view and hide the state's field behind it for
// good. They are the library's own functions, so a copy taken before any view
// existed (the sandbox's, a module's local) refuses a view as well.
static const char REFUSE_KEY = 0;

/// Whether the value at `idx` has either views' metatable. Never raises.
static int is_view(lua_State *L, int idx) {
  if (!lua_getmetatable(L, idx)) return 0;
  int is = is_view_metatable(L, &READONLY_MT_KEY) || is_view_metatable(L, &WRITE_MT_KEY);
  lua_pop(L, 1);
  return is;
}

/// The level, for `error` in the refuser, of the code that called the raw function: past
/// Moonflow's own Lua on the way (the sandbox's rawset calls this one), so the message
/// names the plugin's line, not `[moonflow sandbox]:70`.
static int script_level(lua_State *L) {
  lua_Debug ar;
  int level = 1;  // 0 is the raw function itself
  while (lua_getstack(L, level, &ar) && lua_getinfo(L, "S", &ar)) {
    const char *src = ar.source;
    if (src[0] == '=' || src[0] == '@') src++;
    if (strncmp(src, "[moonflow ", 10) != 0) break;
    level++;
  }
  return level + 2;  // seen from the refuser, which the raw function calls
}

/// Raises for `name` on the view at 1 (key at 2, or none): through the refuser, which
/// names the field, and with a plain message should no refuser be registered.
static int refuse(lua_State *L, const char *name, int has_key) {
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &REFUSE_KEY) == LUA_TFUNCTION) {
    lua_pushstring(L, name);
    lua_pushvalue(L, 1);
    if (has_key) lua_pushvalue(L, 2); else lua_pushnil(L);
    lua_pushinteger(L, script_level(L));
    lua_call(L, 4, 0);
  }
  return luaL_error(L, "%s: the state is a view, not a plain table", name);
}

static int raw_get(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_checkany(L, 2);
  if (is_view(L, 1)) return refuse(L, "rawget", 1);
  lua_settop(L, 2);
  lua_rawget(L, 1);
  return 1;
}

static int raw_set(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_checkany(L, 2);
  luaL_checkany(L, 3);
  if (is_view(L, 1)) return refuse(L, "rawset", 1);
  lua_settop(L, 3);
  lua_rawset(L, 1);
  return 1;
}

static int raw_len(lua_State *L) {
  int t = lua_type(L, 1);
  luaL_argexpected(L, t == LUA_TTABLE || t == LUA_TSTRING, 1, "table or string");
  if (t == LUA_TTABLE && is_view(L, 1)) return refuse(L, "rawlen", 0);
  lua_pushinteger(L, (lua_Integer)lua_rawlen(L, 1));
  return 1;
}

void mf_install_raw_functions(lua_State *L) {
  lua_pushglobaltable(L);
  lua_pushcfunction(L, raw_get);
  lua_setfield(L, -2, "rawget");
  lua_pushcfunction(L, raw_set);
  lua_setfield(L, -2, "rawset");
  lua_pushcfunction(L, raw_len);
  lua_setfield(L, -2, "rawlen");
  lua_pop(L, 1);
}

int mf_register_view_refuser(lua_State *L) {
  // stack: the refuser
  lua_rawsetp(L, LUA_REGISTRYINDEX, &REFUSE_KEY);
  return 1;
}
