// `io.popen` handles that are collected without `close`: Lua's finalizer closes them with
// pclose, which waits for the child to end. A script that drops a handle to a child that
// runs on (`io.popen("sleep 600")`) then blocked the collection step that reached it, or
// `lua_close`, without bound: `run` and `test` never ended. Here a collected popen handle is
// closed on a detached thread of its own, which waits for the child there; an explicit
// `close` (or a to-be-closed variable) still waits, and returns the child's status, as
// Lua's own. Calls no other file.
#include "internal.h"
#include <pthread.h>
#include <stdio.h>

// The close function Lua's io library gives a popen'd stream (static in liolib.c: learned
// from the first handle io.popen returns; the same for every state of the process).
static lua_CFunction lua_pclose_fn;

static void *reap(void *f) {
  pclose((FILE *)f);
  return NULL;
}

/// The files' __gc: a popen handle not closed yet is closed on a thread of its own;
/// anything else goes to Lua's own finalizer (upvalue 1).
static int file_gc(lua_State *L) {
  luaL_Stream *p = (luaL_Stream *)luaL_testudata(L, 1, LUA_FILEHANDLE);
  lua_CFunction pclose_fn = __atomic_load_n(&lua_pclose_fn, __ATOMIC_ACQUIRE);
  if (p != NULL && p->f != NULL && pclose_fn != NULL && p->closef == pclose_fn) {
    pthread_attr_t attr;
    pthread_t thread;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    int started = pthread_create(&thread, &attr, reap, p->f) == 0;
    pthread_attr_destroy(&attr);
    if (started) {
      p->closef = NULL;  // closed, as far as Lua can tell
      p->f = NULL;
      return 0;
    }
  }
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, 0);
  return 0;
}

/// io.popen as Lua's own (upvalue 1, run in this frame so that its errors read as Lua's
/// own), after the host's callout (callouts.c: it may block), noting the close function
/// of the handle it returns.
static int io_popen(lua_State *L) {
  mf_before_callout(L);
  int n = mf_tail_original(L);
  luaL_Stream *p = n == 1 ? (luaL_Stream *)luaL_testudata(L, -1, LUA_FILEHANDLE) : NULL;
  if (p != NULL && p->closef != NULL) __atomic_store_n(&lua_pclose_fn, p->closef, __ATOMIC_RELEASE);
  return n;
}

void mf_install_popen_reaping(lua_State *L) {
  if (luaL_getmetatable(L, LUA_FILEHANDLE) == LUA_TTABLE) {
    if (lua_getfield(L, -1, "__gc") == LUA_TFUNCTION) {
      lua_pushcclosure(L, file_gc, 1);
      lua_setfield(L, -2, "__gc");
    } else {
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  if (lua_getfield(L, -1, LUA_IOLIBNAME) == LUA_TTABLE) {
    lua_getfield(L, -1, "popen");
    if (mf_is_plain_cfunction(L, -1)) {
      lua_pushcclosure(L, io_popen, 1);
      lua_setfield(L, -2, "popen");
    } else {
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 2);
}
