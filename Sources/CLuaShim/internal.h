// What the shim's C files share; not part of the module's interface.
#ifndef CLUASHIM_INTERNAL_H
#define CLUASHIM_INTERNAL_H
#include "CLuaShim.h"

/// For a protected operation: unless L's stack has room for `n` more values, pops the
/// `operands` it takes (as any failure does) and returns MF_NOROOM, pushing nothing.
#define MF_NEED_ROOM(L, n, operands) \
  do { if (!lua_checkstack((L), (n))) { lua_pop((L), (operands)); return MF_NOROOM; } } while (0)

/// The budget of the state L belongs to (any of its threads).
mf_budget *mf_budget_of(lua_State *L);
/// Arms the deadline for an outermost call on L; returns 1 if this call armed it.
int mf_arm(lua_State *L, int64_t limit_ms);
/// Ends what mf_arm started (no-op when `armed` is 0).
void mf_disarm(lua_State *L, int armed);
/// Called by the allocator as lua_close frees the main thread (see mf_close_state).
void mf_state_freed(mf_budget *b);
/// Sets the standalone interpreter's warning function on L, off until `warn("@on")`
/// (warnings.c). Never raises.
void mf_install_warnings(lua_State *L);
/// The read-only views' to-be-closed closer (views.c); the stop hook lets it run.
int mf_view_close(lua_State *L);
/// Around lua_resume(co, L, ...): tell the watchdog which thread runs.
void mf_before_resume(lua_State *co);
void mf_after_resume(lua_State *L);
/// Replaces find, match, gmatch and gsub in the string table at `idx` with the
/// deadline-checking matcher.
void mf_install_matcher(lua_State *L, int idx);
/// Pushes the metatable that marks a table as a JSON array (made on first use: it may
/// allocate, so only inside a protected call). [-0, +1, m]
void mf_push_array_mt(lua_State *L);

#endif
