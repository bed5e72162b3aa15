// Error messages of a bounded size: an error of 100 MB is not copied into
// tracebacks, events and terminals. Used by both message handlers, the host's
// (protected.c) and `moonflow exec`'s (standalone.c). Calls no other file.
#include "internal.h"

enum { MAX_ERROR_BYTES = 4096 };

const char *mf_bounded_message(lua_State *L, const char *msg, size_t len) {
  if (len <= MAX_ERROR_BYTES) return msg;
  size_t cut = MAX_ERROR_BYTES;
  while (cut > 0 && ((unsigned char)msg[cut] & 0xC0) == 0x80) cut--;  // not inside a UTF-8 sequence
  lua_pushlstring(L, msg, cut);
  lua_pushfstring(L, "... (an error message of %I bytes, cut to its first %d)", (lua_Integer)len, (int)cut);
  lua_concat(L, 2);
  return lua_tostring(L, -1);
}
