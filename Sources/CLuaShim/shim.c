#include "internal.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

// MARK: - Budgets

mf_budget *mf_budget_of(lua_State *L) {
  return *(mf_budget **)lua_getextraspace(L);
}

static void *mf_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  mf_budget *b = (mf_budget *)ud;
  size_t old = ptr ? osize : 0;
  if (nsize == 0) {
    if (ptr) {
      // The block that holds the main thread, freed last by lua_close: the
      // watchdog must let go of the state before it is gone.
      if (b->closing && (char *)ptr <= (char *)b->closing && (char *)b->closing < (char *)ptr + osize)
        mf_state_freed(b);
      b->used -= old;
      free(ptr);
    }
    return NULL;
  }
  if (b->limit && nsize > old && b->used + (nsize - old) > b->limit) return NULL;
  void *p = realloc(ptr, nsize);
  if (!p) return NULL;
  b->used = b->used - old + nsize;
  if (b->used > b->peak) b->peak = b->used;
  return p;
}

static int mf_panic(lua_State *L) {
  // Only reachable through a bug in this shim: every raising call is protected.
  const char *msg = lua_tostring(L, -1);
  fprintf(stderr, "moonflow: unprotected Lua error: %s\n", msg ? msg : "?");
  abort();
}

lua_State *mf_newstate(mf_budget *b) {
  lua_State *L = lua_newstate(mf_alloc, b);
  if (!L) return NULL;
  *(mf_budget **)lua_getextraspace(L) = b;  // copied into every new thread
  lua_atpanic(L, mf_panic);
  return L;
}

int64_t mf_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// MARK: - Warnings, as the standalone interpreter shows them

static void warn_off(void *ud, const char *msg, int tocont);
static void warn_on(void *ud, const char *msg, int tocont);
static void warn_cont(void *ud, const char *msg, int tocont);

/// A control message (`@on`, `@off`) when warnings are not mid-message.
static int warn_control(lua_State *L, const char *msg, int tocont) {
  if (tocont || *msg != '@') return 0;
  if (strcmp(msg, "@off") == 0) lua_setwarnf(L, warn_off, L);
  else if (strcmp(msg, "@on") == 0) lua_setwarnf(L, warn_on, L);
  return 1;
}

static void warn_off(void *ud, const char *msg, int tocont) { warn_control((lua_State *)ud, msg, tocont); }

static void warn_piece(lua_State *L, const char *msg, int tocont) {
  fputs(msg, stderr);
  if (tocont) { lua_setwarnf(L, warn_cont, L); return; }
  fputs("\n", stderr);
  fflush(stderr);
  lua_setwarnf(L, warn_on, L);
}

static void warn_on(void *ud, const char *msg, int tocont) {
  if (warn_control((lua_State *)ud, msg, tocont)) return;
  fputs("Lua warning: ", stderr);
  warn_piece((lua_State *)ud, msg, tocont);
}

static void warn_cont(void *ud, const char *msg, int tocont) { warn_piece((lua_State *)ud, msg, tocont); }

void mf_gc_generational(lua_State *L) { lua_gc(L, LUA_GCGEN, 0, 0); }

// MARK: - Protected operations

enum { MAX_ERROR_BYTES = 4096 };

/// `msg` (on the stack), or when longer than MAX_ERROR_BYTES its head cut at a
/// character boundary with the whole size said, pushed: an error of 100 MB is
/// not copied into tracebacks, events and terminals.
static const char *bounded_message(lua_State *L, const char *msg, size_t len) {
  if (len <= MAX_ERROR_BYTES) return msg;
  size_t cut = MAX_ERROR_BYTES;
  while (cut > 0 && ((unsigned char)msg[cut] & 0xC0) == 0x80) cut--;  // not inside a UTF-8 sequence
  lua_pushlstring(L, msg, cut);
  lua_pushfstring(L, "... (an error message of %I bytes, cut to its first %d)", (lua_Integer)len, (int)cut);
  lua_concat(L, 2);
  return lua_tostring(L, -1);
}

static int msgh(lua_State *L) {
  size_t len = 0;
  const char *msg = lua_tolstring(L, 1, &len);
  if (msg == NULL) {
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) {
      msg = lua_tolstring(L, -1, &len);
    } else {
      msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
      len = strlen(msg);
    }
  }
  luaL_traceback(L, L, bounded_message(L, msg, len), 1);
  return 1;
}


static int openlibs_k(lua_State *L) {
  luaL_openlibs(L);
  lua_setwarnf(L, warn_off, L);
  return 0;
}

int mf_openlibs(lua_State *L) {
  MF_NEED_ROOM(L, 1, 0);
  lua_pushcfunction(L, openlibs_k);
  return lua_pcall(L, 0, 0, 0);
}

int mf_load(lua_State *L, const char *buf, size_t len, const char *chunkname, const char *mode) {
  return luaL_loadbufferx(L, buf, len, chunkname, mode);
}

int mf_pcall(lua_State *L, int nargs, int nresults, int64_t limit_ms) {
  MF_NEED_ROOM(L, 1, nargs + 1);
  int base = lua_gettop(L) - nargs;  // the function's index
  lua_pushcfunction(L, msgh);
  lua_insert(L, base);
  int armed = mf_arm(L, limit_ms);
  int status = lua_pcall(L, nargs, nresults, base);
  if (armed && status == LUA_OK && mf_budget_of(L)->timed_out) {
    // The script caught the stop (coroutine.resume, pcall) and returned anyway:
    // the call still failed. nil as the error value: Swift reads timed_out.
    lua_settop(L, base);
    lua_pushnil(L);
    status = LUA_ERRRUN;
  }
  mf_disarm(L, armed);
  lua_remove(L, base);
  return status;
}

int mf_resume(lua_State *L, lua_State *from, int nargs, int *nresults, int64_t limit_ms) {
  lua_State *resumer = from ? from : L;
  int armed = mf_arm(resumer, limit_ms);
  mf_before_resume(L);
  int status = lua_resume(L, from, nargs, nresults);
  mf_after_resume(resumer);
  mf_disarm(resumer, armed);
  if (status != LUA_OK && status != LUA_YIELD) {
    // Append the coroutine's traceback while its stack is still there.
    if (lua_checkstack(L, 6)) {
      size_t len = 0;
      const char *msg = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &len) : NULL;
      // Bounded, then with the traceback (small allocations: they may fail only on memory).
      if (msg) luaL_traceback(L, L, bounded_message(L, msg, len), 0);
    }
  }
  return status;
}

static int newthread_k(lua_State *L) {
  lua_State **out = (lua_State **)lua_touserdata(L, 1);
  *out = lua_newthread(L);
  return 1;
}

int mf_newthread(lua_State *L, lua_State **out) {
  MF_NEED_ROOM(L, 2, 0);
  lua_pushcfunction(L, newthread_k);
  lua_pushlightuserdata(L, out);
  return lua_pcall(L, 1, 1, 0);
}

int mf_closethread(lua_State *co, lua_State *from) {
#if LUA_VERSION_RELEASE_NUM >= 50406
  return lua_closethread(co, from);
#else
  (void)from;
  return lua_resetthread(co);
#endif
}

static int ref_k(lua_State *L) {
  int *out = (int *)lua_touserdata(L, -1);
  lua_pop(L, 1);
  *out = luaL_ref(L, LUA_REGISTRYINDEX);
  return 0;
}

int mf_ref(lua_State *L, int *outRef) {
  MF_NEED_ROOM(L, 2, 1);
  // value on top -> registry; pops it.
  lua_pushcfunction(L, ref_k);
  lua_insert(L, -2);
  lua_pushlightuserdata(L, outRef);
  return lua_pcall(L, 2, 0, 0);
}

void mf_unref(lua_State *L, int ref) { luaL_unref(L, LUA_REGISTRYINDEX, ref); }

static int gc_k(lua_State *L) { lua_gc(L, LUA_GCCOLLECT, 0); return 0; }
int mf_gc_collect(lua_State *L) {
  MF_NEED_ROOM(L, 1, 0);
  lua_pushcfunction(L, gc_k);
  return lua_pcall(L, 0, 0, 0);
}
int mf_gc_count_kb(lua_State *L) { return lua_gc(L, LUA_GCCOUNT, 0); }

// MARK: - Building values

// Registry keys are addresses (lua_rawgetp): reading them never allocates.
static const char ARRAY_MT_KEY = 0;
static const char OBJECT_TAG_KEY = 0;

void mf_push_array_mt(lua_State *L) {
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &ARRAY_MT_KEY) == LUA_TNIL) {
    lua_pop(L, 1);
    lua_createtable(L, 0, 2);
    lua_pushliteral(L, "moonflow.array");
    lua_setfield(L, -2, "__name");
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &ARRAY_MT_KEY);
  }
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

// Read-only views of the state (what `handle` and effect handlers get): the views'
// metatable and the weak table from each view to the table it shows.
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

int mf_metatable_kind(lua_State *L, int idx) {
  if (!lua_getmetatable(L, idx)) return 0;
  // A marker of mf.array()/mf.object(): a metatable holding only __name = "moonflow.array"|"moonflow.object".
  int kind = 3;
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &ARRAY_MT_KEY) != LUA_TNIL && lua_rawequal(L, -1, -2)) kind = 1;
  lua_pop(L, 1);
  if (kind == 3) {
    int fields = 0, named = 0;
    lua_pushnil(L);
    while (lua_next(L, -2) != 0) {
      fields++;
      if (lua_type(L, -2) == LUA_TSTRING && strcmp(lua_tostring(L, -2), "__name") == 0 &&
          lua_type(L, -1) == LUA_TSTRING && strcmp(lua_tostring(L, -1), "moonflow.object") == 0) named = 1;
      lua_pop(L, 1);
    }
    if (fields == 1 && named) kind = 2;
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
  for (int k = 0; k < count; k++) {
    const mf_op *op = &ops[k];
    luaL_checkstack(L, 4, "value too deeply nested");
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

// MARK: - Swift functions

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

// MARK: - Table access

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

// MARK: - Profiles (written in Lua, run as text chunks)

static const char *TEXT_SEARCHER =
  "local package, searchpath, loadfile, type, error = package, package.searchpath, loadfile, type, error\n"
  "package.searchers[2] = function(name)\n"
  "  local path = package.path\n"
  "  if type(path) ~= 'string' and type(path) ~= 'number' then error(\"'package.path' must be a string\", 0) end\n"
  "  local file, err = searchpath(name, path)\n"
  "  if not file then return err end\n"
  "  local chunk, lerr = loadfile(file, 't')\n"
  "  if not chunk then error((\"error loading module '%s' from file '%s':\\n\\t%s\"):format(name, file, lerr), 0) end\n"
  "  return chunk, file\n"
  "end\n";

static const char *SANDBOX =
  "local G, load0, setmetatable0, getmetatable0, rawset0, error0, select, type, tostring, next ="
  "  _G, load, setmetatable, getmetatable, rawset, error, select, type, tostring, next\n"
  "local loadfile0, ipairs, concat, match, find, gsub, format = loadfile, ipairs, table.concat, string.match, string.find, string.gsub, string.format\n"
  "os.execute, os.exit, os.remove, os.rename, os.tmpname, os.getenv, os.setlocale = nil\n"
  "G.io, G.debug, G.dofile, G.loadfile = nil, nil, nil, nil\n"
  "package.loaded.io, package.loaded.debug = nil, nil\n"
  "package.loadlib, package.searchpath = nil, nil\n"
  "package.path, package.cpath = '', ''  -- kept as strings for hosts that add to them; no searcher reads them\n"
  // require finds what the host preloads and NAME.lua or NAME/init.lua under
  // one folder the host chooses (the script's), as text; package.path plays no part.
  "local root = '.'\n"
  "package.searchers = { package.searchers[1], function(name)\n"
  "  if not match(name, '^[%w_]+[%w_.]*$') or find(name, '..', 1, true) or match(name, '%.$') then\n"
  "    return format('no module %s in the sandbox (a module name is letters, digits, _ and dots)', name)\n"
  "  end\n"
  "  local base, tried = root .. '/' .. gsub(name, '%.', '/'), {}\n"
  "  for _, file in ipairs { base .. '.lua', base .. '/init.lua' } do\n"
  "    local chunk, err = loadfile0(file, 't')\n"
  "    if chunk then return chunk, file end\n"
  "    if not find(err, '^cannot open') then\n"
  "      error0(format('error loading module \\'%s\\' from file \\'%s\\':\\n\\t%s', name, file, err), 2)\n"
  "    end\n"
  "    tried[#tried + 1] = format('no file \\'%s\\'', file)\n"
  "  end\n"
  "  return concat(tried, '\\n\\t')\n"
  "end }\n"
  "G.load = function(chunk, name, mode, ...)\n"
  "  if mode ~= nil and mode ~= 't' then error0(\"load: binary chunks are refused in the sandbox (use mode 't')\", 2) end\n"
  "  if select('#', ...) > 0 then return load0(chunk, name, 't', ...) end\n"
  "  return load0(chunk, name, 't')\n"
  "end\n"
  "G.setmetatable = function(t, mt)\n"
  "  if t == G then error0('setmetatable: the sandbox\\'s globals cannot get a metatable', 2) end\n"
  "  if type(mt) == 'table' and G.rawget(mt, '__gc') ~= nil then\n"
  "    error0('setmetatable: __gc metamethods are refused in the sandbox', 2)\n"
  "  end\n"
  "  return setmetatable0(t, mt)\n"
  "end\n"
  "local frozen = setmetatable0({}, { __mode = 'k' })\n"
  "local function freeze(name, t)\n"
  "  local function walk(_, k) return next(t, k) end\n"  // pairs never hands out t itself
  "  local proxy = setmetatable0({}, {\n"
  "    __index = t,\n"
  "    __newindex = function(_, k) error0(format('attempt to modify read-only table %s (field %s)', name, tostring(k)), 2) end,\n"
  "    __pairs = function(self) return walk, self, nil end,\n"
  "    __len = function() return #t end,\n"
  "    __metatable = false,\n"
  "  })\n"
  "  frozen[proxy] = true\n"
  "  return proxy\n"
  "end\n"
  "G.rawset = function(t, k, v)\n"
  "  if frozen[t] then error0(format('rawset: %s is read-only in the sandbox', tostring(k)), 2) end\n"
  "  return rawset0(t, k, v)\n"
  "end\n"
  "local smt = getmetatable0('')\n"
  "for _, name in ipairs { 'string', 'table', 'math', 'utf8', 'coroutine', 'os' } do\n"
  "  local proxy = freeze(name, G[name])\n"
  "  G[name] = proxy\n"
  "  package.loaded[name] = proxy\n"
  "end\n"
  "smt.__metatable = false\n"
  "return function(folder) root = folder end\n";

static int pushstring_k(lua_State *L) {
  lua_pushstring(L, (const char *)lua_touserdata(L, 1));
  return 1;
}

static int run_chunk(lua_State *L, const char *code, const char *name) {
  MF_NEED_ROOM(L, 1, 0);
  int status = luaL_loadbufferx(L, code, strlen(code), name, "t");
  if (status != LUA_OK) return status;
  return lua_pcall(L, 0, 0, 0);
}

static const char SANDBOX_ROOT_KEY = 0;

int mf_apply_sandbox(lua_State *L) {
  MF_NEED_ROOM(L, 1, 0);
  int status = luaL_loadbufferx(L, SANDBOX, strlen(SANDBOX), "=[moonflow sandbox]", "t");
  if (status != LUA_OK) return status;
  status = lua_pcall(L, 0, 1, 0);
  if (status != LUA_OK) return status;
  lua_rawsetp(L, LUA_REGISTRYINDEX, &SANDBOX_ROOT_KEY);  // the setter of the module folder
  return LUA_OK;
}

int mf_sandbox_module_root(lua_State *L, const char *folder) {
  MF_NEED_ROOM(L, 3, 0);
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &SANDBOX_ROOT_KEY) != LUA_TFUNCTION) { lua_pop(L, 1); return LUA_OK; }
  lua_pushcfunction(L, pushstring_k);
  lua_pushlightuserdata(L, (void *)folder);
  int status = lua_pcall(L, 1, 1, 0);
  if (status != LUA_OK) { lua_remove(L, -2); return status; }
  status = lua_pcall(L, 1, 0, 0);
  return status;
}
int mf_install_text_searcher(lua_State *L) { return run_chunk(L, TEXT_SEARCHER, "=[moonflow searcher]"); }

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
