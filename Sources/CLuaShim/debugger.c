// What a debugger reads of a paused Lua thread: its frames, and the variables of one
// frame (locals, upvalues) or of a table, each shown as text made without running a
// metamethod (a `__tostring` or `__index` of the plugin's never runs for a look). A view
// of the state (what `reduce`, `handle` and effect handlers get) is shown as the plain
// table it shows. Tables shown are kept in a holder the caller owns, until it empties it
// (mf_release_shown). Calls views.c (which table a view shows), watchdog.c (an evaluation
// armed as a call of its own, with its own time limit) and debughook.c (no debugger stop
// inside an evaluation).
#include "internal.h"

#include <stdio.h>
#include <string.h>

int mf_frames(lua_State *L, int level, mf_frame *out, int capacity) {
  int n = 0;
  lua_Debug ar;
  while (n < capacity && level >= 0 && lua_getstack(L, level + n, &ar)) {
    // "S", "l" and "n" fill fixed fields and point into strings the frame keeps: no allocation.
    if (!lua_getinfo(L, "Sln", &ar)) break;
    out[n].source = ar.source;
    out[n].line = ar.currentline;
    out[n].linedefined = ar.linedefined;
    out[n].name = ar.name;
    out[n].what = ar.what;
    n++;
  }
  return n;
}

/// Longest string shown whole in a variable's text; longer ones end in "...".
#define MF_SHOWN_STRING 200
/// Most entries listed for one table (a debugger pages no further).
#define MF_SHOWN_ENTRIES 1000

/// Pushes the text of the value at `idx`: what a debugger shows beside a name.
static void push_text(lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  switch (lua_type(L, idx)) {
    case LUA_TNIL: lua_pushliteral(L, "nil"); break;
    case LUA_TBOOLEAN: lua_pushstring(L, lua_toboolean(L, idx) ? "true" : "false"); break;
    case LUA_TNUMBER:
      lua_pushvalue(L, idx);
      lua_tolstring(L, -1, NULL);  // a copy converted in place: numbers have no metamethods here
      break;
    case LUA_TSTRING: {
      size_t len;
      const char *s = lua_tolstring(L, idx, &len);
      luaL_Buffer b;
      luaL_buffinit(L, &b);
      luaL_addchar(&b, '"');
      size_t shown = len > MF_SHOWN_STRING ? MF_SHOWN_STRING : len;
      for (size_t i = 0; i < shown; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') { luaL_addchar(&b, '\\'); luaL_addchar(&b, (char)c); }
        else if (c == '\n') luaL_addstring(&b, "\\n");
        else if (c == '\t') luaL_addstring(&b, "\\t");
        else if (c < 32 || c == 127) { char esc[8]; snprintf(esc, sizeof esc, "\\%d", c); luaL_addstring(&b, esc); }
        else luaL_addchar(&b, (char)c);
      }
      luaL_addchar(&b, '"');
      if (shown < len) luaL_addstring(&b, "...");
      luaL_pushresult(&b);
      break;
    }
    case LUA_TTABLE: {
      int count = 0;
      lua_pushnil(L);
      while (count <= MF_SHOWN_ENTRIES && lua_next(L, idx)) { lua_pop(L, 1); count++; }
      if (count > MF_SHOWN_ENTRIES) lua_pop(L, 1);  // the key left by the early stop
      if (count > MF_SHOWN_ENTRIES) lua_pushfstring(L, "table (more than %d entries)", MF_SHOWN_ENTRIES);
      else lua_pushfstring(L, "table (%d %s)", count, count == 1 ? "entry" : "entries");
      break;
    }
    case LUA_TFUNCTION: {
      lua_Debug ar;
      lua_pushvalue(L, idx);
      lua_getinfo(L, ">S", &ar);
      if (ar.linedefined > 0) lua_pushfstring(L, "function %s:%d", ar.short_src, ar.linedefined);
      else lua_pushstring(L, "function (C)");
      break;
    }
    default: lua_pushstring(L, luaL_typename(L, idx)); break;
  }
}

/// Appends {name = <name at -2>, text, type, ref} for the value on top, popping both;
/// a table is kept in the holder (at `holder`) and `ref` is its index there. With nil at
/// `holder`, nothing is kept and there is no `ref`.
static void add_entry(lua_State *L, int list, int holder) {
  if (lua_type(L, -1) == LUA_TTABLE && mf_readonly_target(L, -1)) lua_remove(L, -2);  // a view: its table
  lua_createtable(L, 0, 4);
  lua_rotate(L, -3, 1);                 // entry, name, value
  int value = lua_gettop(L);
  int entry = value - 2;
  lua_pushvalue(L, value - 1);
  lua_setfield(L, entry, "name");
  push_text(L, value);
  lua_setfield(L, entry, "text");
  lua_pushstring(L, luaL_typename(L, value));
  lua_setfield(L, entry, "type");
  if (lua_type(L, value) == LUA_TTABLE && lua_type(L, holder) == LUA_TTABLE) {
    lua_Integer ref = (lua_Integer)lua_rawlen(L, holder) + 1;
    lua_pushvalue(L, value);
    lua_rawseti(L, holder, ref);
    lua_pushinteger(L, ref);
    lua_setfield(L, entry, "ref");
  }
  lua_settop(L, entry);
  lua_rawseti(L, list, (lua_Integer)lua_rawlen(L, list) + 1);
}

/// Pushes the name a table key is shown by: the string itself, or `[key]`.
static void push_key_name(lua_State *L, int key) {
  if (lua_type(L, key) == LUA_TSTRING) { lua_pushvalue(L, key); return; }
  push_text(L, key);
  lua_pushfstring(L, "[%s]", lua_tostring(L, -1));
  lua_remove(L, -2);
}

struct variables_args { int level; int kind; lua_Integer ref; };

static int variables_k(lua_State *L) {
  // stack: holder, args
  const struct variables_args *args = (const struct variables_args *)lua_touserdata(L, 2);
  lua_settop(L, 1);
  lua_newtable(L);  // the list, at 2
  if (args->kind == 't') {
    if (lua_rawgeti(L, 1, args->ref) != LUA_TTABLE) return luaL_error(L, "no table %d to show", (int)args->ref);
    int table = lua_gettop(L);
    lua_Integer n = (lua_Integer)lua_rawlen(L, table);
    int shown = 0;
    for (lua_Integer i = 1; i <= n && shown < MF_SHOWN_ENTRIES; i++, shown++) {
      lua_pushfstring(L, "[%I]", (LUAI_UACINT)i);
      lua_rawgeti(L, table, i);
      add_entry(L, 2, 1);
    }
    lua_pushnil(L);
    while (shown < MF_SHOWN_ENTRIES && lua_next(L, table)) {
      int key = lua_gettop(L) - 1;
      if (lua_isinteger(L, key) && lua_tointeger(L, key) >= 1 && lua_tointeger(L, key) <= n) { lua_pop(L, 1); continue; }
      push_key_name(L, key);
      lua_pushvalue(L, key + 1);
      add_entry(L, 2, 1);
      lua_pop(L, 1);  // the value; the key stays for lua_next
      shown++;
    }
    lua_settop(L, 2);
    return 1;
  }
  lua_Debug ar;
  // Level 0 is this function; the caller's level 0 is 1 here.
  if (!lua_getstack(L, args->level + 1, &ar)) return luaL_error(L, "no frame %d", args->level);
  if (args->kind == 'l') {
    for (int i = 1;; i++) {
      const char *name = lua_getlocal(L, &ar, i);
      if (!name) break;
      if (name[0] == '(') { lua_pop(L, 1); continue; }  // (temporary), (for state), (C temporary)
      lua_pushstring(L, name);
      lua_insert(L, -2);
      add_entry(L, 2, 1);
    }
  } else {
    lua_getinfo(L, "f", &ar);  // pushes the frame's function
    int fn = lua_gettop(L);
    for (int i = 1;; i++) {
      const char *name = lua_getupvalue(L, fn, i);
      if (!name) break;
      if (strcmp(name, "_ENV") == 0) { lua_pop(L, 1); continue; }  // the globals, not a variable
      lua_pushstring(L, name[0] ? name : "?");
      lua_insert(L, -2);
      add_entry(L, 2, 1);
    }
    lua_settop(L, 2);
  }
  return 1;
}

int mf_variables(lua_State *L, int holder, int level, int kind, lua_Integer ref) {
  MF_NEED_ROOM(L, 4, 0);
  holder = lua_absindex(L, holder);
  struct variables_args args = { level, kind, ref };
  lua_pushcfunction(L, variables_k);
  lua_pushvalue(L, holder);
  lua_pushlightuserdata(L, &args);
  return lua_pcall(L, 2, 1, 0);
}

/// The evaluation of an expression in a stopped frame: the frame's upvalues and locals (a
/// later local shadowing an earlier one, as in the code) and then its function's globals
/// (the state's, for a function that names none) are the names it reads. Every table it reaches through them is a read-only stand-in
/// (a write raises "evaluate cannot change ..."), so looking never changes the state.
/// Loaded as text, once per evaluation.
static const char evaluate_lua[] =
  "local scope, fenv, expr = ...\n"
  "local standins, originals = setmetatable({}, { __mode = 'k' }), setmetatable({}, { __mode = 'k' })\n"
  "local function wrap(v)\n"
  "  if type(v) ~= 'table' then return v end\n"
  "  local w = standins[v]\n"
  "  if w then return w end\n"
  "  w = setmetatable({}, {\n"
  "    __index = function(_, k) return wrap(v[k]) end,\n"
  "    __newindex = function(_, k) error('evaluate cannot change a table (it wrote ' .. tostring(k) .. ')', 2) end,\n"
  "    __len = function() return #v end,\n"
  "    __pairs = function() return function(_, k) local nk, nv = next(v, k) return nk, wrap(nv) end, w, nil end,\n"
  "  })\n"
  "  standins[v], originals[w] = w, v\n"
  "  return w\n"
  "end\n"
  "local env = setmetatable({}, {\n"
  "  __index = function(_, k) if scope[k] ~= nil then return wrap(scope[k]) end return wrap(fenv[k]) end,\n"
  "  __newindex = function(_, k) error('evaluate cannot assign ' .. tostring(k), 2) end,\n"
  "})\n"
  "local chunk, err = load('return ' .. expr, '=(evaluate)', 't', env)\n"
  "if not chunk then error(err, 0) end\n"
  "local result = chunk()\n"
  "return originals[result] or result\n";

struct evaluate_args { int level; const char *expr; size_t len; };

/// Longest an evaluation may run: a debugger's look never hangs the run. Measured as a
/// call's time limit is (watchdog.c): the thread's CPU time, with the limit's wall-clock
/// backstop (mf_backstop_ms: 6 s) for an evaluation that blocks without running.
#define MF_EVALUATE_MS 2000

static int evaluate_k(lua_State *L) {
  // stack: holder (or nil: keep nothing), args
  const struct evaluate_args *args = (const struct evaluate_args *)lua_touserdata(L, 2);
  lua_settop(L, 1);
  lua_Debug ar;
  if (!lua_getstack(L, args->level + 1, &ar)) return luaL_error(L, "no frame %d", args->level);
  // Compiled once a state and kept in its registry: a log point evaluates on every hit.
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, evaluate_lua) != LUA_TFUNCTION) {
    lua_pop(L, 1);
    if (luaL_loadbufferx(L, evaluate_lua, sizeof evaluate_lua - 1, "=(evaluate)", "t") != LUA_OK) return lua_error(L);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, evaluate_lua);
  }
  int fn = lua_gettop(L);
  lua_newtable(L);  // scope
  int scope = lua_gettop(L);
  lua_getinfo(L, "f", &ar);
  int frame_fn = lua_gettop(L);
  lua_pushnil(L);   // fenv, filled by the _ENV upvalue if the function has one
  int fenv = lua_gettop(L);
  for (int i = 1;; i++) {
    const char *name = lua_getupvalue(L, frame_fn, i);
    if (!name) break;
    if (strcmp(name, "_ENV") == 0) lua_replace(L, fenv);
    else if (name[0]) lua_setfield(L, scope, name);
    else lua_pop(L, 1);
  }
  // A function that names no global has no _ENV of its own: the expression reads the
  // state's globals, which a plugin's chunk sees (the sandbox's, in a sandboxed state).
  if (lua_isnil(L, fenv)) { lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS); lua_replace(L, fenv); }
  for (int i = 1;; i++) {
    const char *name = lua_getlocal(L, &ar, i);
    if (!name) break;
    if (name[0] == '(') { lua_pop(L, 1); continue; }
    lua_setfield(L, scope, name);
  }
  // On a thread of its own, armed as a call of its own (watchdog.c): the stopped thread runs
  // no hook (the debugger's stop is one) and its time limit is held, so without it nothing
  // would end a loop in the expression. Past the limit the stop hook raises on every
  // instruction until the expression's thread is done, so its pcalls cannot swallow the stop,
  // and the matcher and string.rep stop in C. Then the time limit and the stopped thread's
  // hook are put back as they were: the run goes on as if nothing had been evaluated.
  lua_State *co = lua_newthread(L);
  lua_pushvalue(L, fn);
  lua_pushvalue(L, scope);
  lua_pushvalue(L, fenv);
  lua_pushlstring(L, args->expr, args->len);
  lua_xmove(L, co, 4);
  lua_Hook hook = lua_gethook(L);
  int mask = lua_gethookmask(L), count = lua_gethookcount(L);
  mf_evaluation saved;
  int nres = 0;
  mf_debug_evaluating(L, 1);
  mf_evaluation_begin(L, co, MF_EVALUATE_MS, &saved);
  int status = lua_resume(co, L, 3, &nres);
  int stopped = mf_evaluation_end(L, &saved);
  mf_debug_evaluating(L, 0);
  lua_sethook(L, hook, mask, count);
  if (stopped && status != LUA_OK) {
    lua_pushfstring(L, "evaluate ran longer than %d ms and was stopped; the run is as it was", MF_EVALUATE_MS);
    return lua_error(L);
  }
  if (status == LUA_YIELD) return luaL_error(L, "evaluate cannot yield (it reads; it does not wait)");
  lua_xmove(co, L, 1);  // the result, or the error
  if (status != LUA_OK) return lua_error(L);
  int result = lua_gettop(L);
  lua_newtable(L);  // the list
  int list = lua_gettop(L);
  lua_pushlstring(L, args->expr, args->len);
  lua_pushvalue(L, result);
  add_entry(L, list, 1);
  return 1;
}

int mf_evaluate(lua_State *L, int holder, int level, const char *expr, size_t len) {
  MF_NEED_ROOM(L, 4, 0);
  holder = lua_absindex(L, holder);
  struct evaluate_args args = { level, expr, len };
  lua_pushcfunction(L, evaluate_k);
  lua_pushvalue(L, holder);
  lua_pushlightuserdata(L, &args);
  return lua_pcall(L, 2, 1, 0);
}

int mf_evaluate_unkept(lua_State *L, int level, const char *expr, size_t len) {
  MF_NEED_ROOM(L, 4, 0);
  struct evaluate_args args = { level, expr, len };
  lua_pushcfunction(L, evaluate_k);
  lua_pushnil(L);
  lua_pushlightuserdata(L, &args);
  return lua_pcall(L, 2, 1, 0);
}

static int release_shown_k(lua_State *L) {
  // stack: holder
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_pushnil(L);
  while (lua_next(L, 1)) {
    lua_pop(L, 1);          // the value; the key stays for lua_next
    lua_pushvalue(L, -1);
    lua_pushnil(L);
    lua_rawset(L, 1);       // a key already there set to nil: allowed while traversing
  }
  return 0;
}

int mf_release_shown(lua_State *L, int holder) {
  MF_NEED_ROOM(L, 2, 0);
  holder = lua_absindex(L, holder);
  lua_pushcfunction(L, release_shown_k);
  lua_pushvalue(L, holder);
  return lua_pcall(L, 1, 0, 0);
}
