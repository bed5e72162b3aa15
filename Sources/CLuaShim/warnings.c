// Warnings as the standalone interpreter shows them: off until `warn("@on")`, then
// `Lua warning: ` lines on standard error. Calls no other file; protected.c
// installs it as it opens the standard libraries.
#include "internal.h"
#include <stdio.h>
#include <string.h>

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

void mf_install_warnings(lua_State *L) { lua_setwarnf(L, warn_off, L); }
