// Protected operations: the Lua API calls Swift makes that can raise (open the
// libraries, call, resume, make threads and references, collect), each run inside
// lua_pcall so no error unwinds through Swift. Calls watchdog.c (to arm the time
// limit around a call), warnings.c, views.c (the raw functions that refuse a view),
// pipes.c (popen handles collected without close), callouts.c (the host told before Lua
// calls out into code that may block), messages.c (errors cut to a size) and debughook.c
// (a debugger stops at an error before the stack unwinds).
#include "internal.h"
#include <stdlib.h>
#include <string.h>

static int msgh(lua_State *L) {
  mf_debug_error(L, 1);  // a debugger may stop at the failing line, before the stack unwinds
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
  luaL_traceback(L, L, mf_bounded_message(L, msg, len), 1);
  return 1;
}


static int openlibs_k(lua_State *L) {
  if (lua_toboolean(L, 1)) {
    lua_pushboolean(L, 1);
    lua_setfield(L, LUA_REGISTRYINDEX, "LUA_NOENV");
  }
  lua_settop(L, 0);
  luaL_openlibs(L);
  mf_install_popen_reaping(L);
  mf_install_callouts(L);
  mf_install_raw_functions(L);
  mf_install_warnings(L);
  return 0;
}

int mf_openlibs(lua_State *L) { return mf_openlibs_env(L, 0); }
int mf_openlibs_env(lua_State *L, int ignore_env) {
  MF_NEED_ROOM(L, 2, 0);
  lua_pushcfunction(L, openlibs_k);
  lua_pushboolean(L, ignore_env);
  return lua_pcall(L, 1, 0, 0);
}
void mf_gc_generational(lua_State *L) { lua_gc(L, LUA_GCGEN, 0, 0); }

int mf_load(lua_State *L, const char *buf, size_t len, const char *chunkname, const char *mode) {
  return luaL_loadbufferx(L, buf, len, chunkname, mode);
}

int mf_lua_release(void) { return LUA_VERSION_RELEASE_NUM; }

typedef struct { unsigned char *bytes; size_t length, capacity; int failed; } DumpBuffer;

static int dump_writer(lua_State *L, const void *p, size_t size, void *ud) {
  (void)L;
  DumpBuffer *b = ud;
  if (b->length + size > b->capacity) {
    size_t capacity = b->capacity ? b->capacity : 4096;
    while (capacity < b->length + size) capacity *= 2;
    unsigned char *grown = realloc(b->bytes, capacity);
    if (grown == NULL) { b->failed = 1; return 1; }
    b->bytes = grown;
    b->capacity = capacity;
  }
  memcpy(b->bytes + b->length, p, size);
  b->length += size;
  return 0;
}

int mf_dump(lua_State *L, unsigned char **out, size_t *length) {
  DumpBuffer b = { NULL, 0, 0, 0 };
  int status = lua_dump(L, dump_writer, &b, 0);
  if (status != 0 || b.failed) { free(b.bytes); return 1; }
  *out = b.bytes;
  *length = b.length;
  return 0;
}

int mf_pcall(lua_State *L, int nargs, int nresults, int64_t limit_ms) {
  MF_NEED_ROOM(L, 1, nargs + 1);
  int base = lua_gettop(L) - nargs;  // the function's index
  lua_pushcfunction(L, msgh);
  lua_insert(L, base);
  int armed = mf_arm(L, limit_ms);
  if (!armed) mf_gc_release(L);
  int status = lua_pcall(L, nargs, nresults, base);
  if (!armed) mf_gc_hold(L);
  if (armed && status == LUA_OK && __atomic_load_n(&mf_budget_of(L)->timed_out, __ATOMIC_ACQUIRE)) {
    // The script caught the stop (coroutine.resume, pcall) and returned anyway:
    // the call still failed. nil as the error value: Swift takes the flag (mf_budget_take_timeout).
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
  if (!armed) mf_gc_release(resumer);
  mf_before_resume(L);
  int status = lua_resume(L, from, nargs, nresults);
  mf_after_resume(resumer);
  if (!armed) mf_gc_hold(resumer);
  mf_disarm(resumer, armed);
  if (status != LUA_OK && status != LUA_YIELD) {
    mf_debug_error(L, 0);  // the coroutine's stack is still there: a debugger may stop in it
    // Append the coroutine's traceback while its stack is still there.
    if (lua_checkstack(L, 6)) {
      size_t len = 0;
      const char *msg = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &len) : NULL;
      // Bounded, then with the traceback (small allocations: they may fail only on memory).
      if (msg) luaL_traceback(L, L, mf_bounded_message(L, msg, len), 0);
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

int64_t mf_registry_refs(lua_State *L) {
  // luaL_unref chains freed slots through integers: every other value is held.
  if (!lua_checkstack(L, 2)) return -1;
  int64_t n = 0;
  lua_pushnil(L);
  while (lua_next(L, LUA_REGISTRYINDEX) != 0) {
    if (lua_type(L, -1) != LUA_TNUMBER) n++;
    lua_pop(L, 1);
  }
  return n;
}

static int gc_k(lua_State *L) { lua_gc(L, LUA_GCCOLLECT, 0); return 0; }
int mf_gc_collect(lua_State *L, int64_t limit_ms) {
  MF_NEED_ROOM(L, 1, 0);
  // A call of its own: its finalizers run under the deadline.
  int armed = mf_arm(L, limit_ms);
  if (!armed) mf_gc_release(L);
  lua_pushcfunction(L, gc_k);
  int status = lua_pcall(L, 0, 0, 0);
  if (!armed) mf_gc_hold(L);
  mf_disarm(L, armed);
  // A finalizer stopped here became a warning, as Lua makes errors in __gc: no
  // error of this call to report, and none for the next one to find.
  if (armed) __atomic_store_n(&mf_budget_of(L)->timed_out, 0, __ATOMIC_RELAXED);
  return status;
}
