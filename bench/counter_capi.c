/* (b) of the feature suite (docs/contributing.md, Benchmarks): a minimal C host
 * driving the counter feature's own handle and reduce (plugins/counter/init.lua, loaded through
 * bench/counter_def.lua) through the Lua C API: per action one lua_pcall of
 * handle(action, state) and one of reduce(state, mutation), then the "observer"
 * reads state.count. That is the least any embedding host has to do.
 *
 * Two variants: the action table reused (as counter_loop.lua does) and a fresh
 * action table built per action (as a host receiving actions from outside must).
 *
 * Build: cc -O2 -o counter_capi bench/counter_capi.c $(pkg-config --cflags --libs lua5.4)
 * Usage: counter_capi ROOT [ACTIONS] [RUNS]   (ROOT: the repository)
 * Prints: capi_ns <median> runs=N  and  capi_fresh_action_ns <median> runs=N
 */
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void check(lua_State *L, int status, const char *what) {
  if (status == LUA_OK) return;
  fprintf(stderr, "counter_capi: %s: %s\n", what, lua_tostring(L, -1));
  exit(1);
}

static int compare(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Stack on entry: 1 handle, 2 reduce. Returns ns per action. */
static double run_once(lua_State *L, long n, int fresh) {
  lua_createtable(L, 0, 1); /* 3: state */
  lua_pushinteger(L, 0);
  lua_setfield(L, 3, "count");
  lua_createtable(L, 0, 1); /* 4: the reused action */
  lua_pushliteral(L, "increment");
  lua_setfield(L, 4, "type");
  lua_Integer seen = 0;
  double t0 = now_ns();
  for (long i = 0; i < n; i++) {
    lua_pushvalue(L, 1); /* handle */
    if (fresh) {
      lua_createtable(L, 0, 1);
      lua_pushliteral(L, "increment");
      lua_setfield(L, -2, "type");
    } else {
      lua_pushvalue(L, 4);
    }
    lua_pushvalue(L, 3);
    check(L, lua_pcall(L, 2, 1, 0), "handle"); /* 5: mutation */
    lua_pushvalue(L, 2); /* reduce */
    lua_pushvalue(L, 3);
    lua_pushvalue(L, 5);
    check(L, lua_pcall(L, 2, 1, 0), "reduce"); /* 6: the state it returns */
    lua_replace(L, 3);
    lua_settop(L, 4);
    lua_getfield(L, 3, "count");
    seen = lua_tointeger(L, -1);
    lua_pop(L, 1);
  }
  double t1 = now_ns();
  if (seen != (lua_Integer)n) {
    fprintf(stderr, "counter_capi: count is %lld, expected %ld\n", (long long)seen, n);
    exit(1);
  }
  lua_settop(L, 2);
  return (t1 - t0) / (double)n;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: counter_capi ROOT [ACTIONS] [RUNS]\n");
    return 2;
  }
  const char *root = argv[1];
  long n = argc > 2 ? atol(argv[2]) : 1000000;
  int runs = argc > 3 ? atoi(argv[3]) : 7;
  if (runs < 1 || runs > 99 || n < 1) return 2;

  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  /* def = dofile(ROOT/bench/counter_def.lua)(ROOT/plugins/counter/init.lua) */
  char path[4096];
  snprintf(path, sizeof path, "%s/bench/counter_def.lua", root);
  check(L, luaL_dofile(L, path), path);
  snprintf(path, sizeof path, "%s/plugins/counter/init.lua", root);
  lua_pushstring(L, path);
  check(L, lua_pcall(L, 1, 1, 0), path);
  lua_getfield(L, -1, "handle");
  lua_getfield(L, -2, "reduce");
  lua_remove(L, -3); /* 1: handle, 2: reduce */

  const char *names[2] = {"capi_ns", "capi_fresh_action_ns"};
  for (int fresh = 0; fresh <= 1; fresh++) {
    double samples[99];
    for (int r = 0; r < runs; r++) samples[r] = run_once(L, n, fresh);
    qsort(samples, (size_t)runs, sizeof samples[0], compare);
    printf("%s %.1f runs=%d\n", names[fresh], samples[runs / 2], runs);
  }
  lua_close(L);
  return 0;
}
