// Budgets: their making and freeing, each state's allocator, which holds it to its
// memory limit and keeps its peak, and the state's creation with that allocator and
// the panic handler. Calls
// only watchdog.c (mf_state_freed, as lua_close frees the main thread), which never
// calls back: it reads the budget through internal.h's inline mf_budget_of.
#include "internal.h"
#include <stdio.h>
#include <stdlib.h>

mf_budget *mf_budget_new(size_t limit) {
  mf_budget *b = calloc(1, sizeof *b);
  if (b) b->limit = limit;
  return b;
}

void mf_budget_free(mf_budget *b) { free(b); }

size_t mf_budget_used(const mf_budget *b) { return b->used; }
size_t mf_budget_peak(const mf_budget *b) { return b->peak; }
void mf_budget_reset_peak(mf_budget *b) { b->peak = b->used; }

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
