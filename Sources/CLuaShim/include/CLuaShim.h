// CLuaShim: the only C code Moonflow owns. It gives Swift callable forms of
// Lua 5.4's macros, runs every Lua API call that can raise (allocate, run a
// metamethod) inside a protected call, and is the only place that calls
// lua_error / luaL_error. Swift frames never see a longjmp.
//
// Every prototype that touches a Lua stack says its effect in the notation of
// the Lua 5.4 manual (§4.6): `[-o, +p]` pops o values and pushes p. A protected
// operation that fails returns its status with one error value pushed in place
// of its results, written `error: [-o, +1]`. "Needs k slots" means it pushes
// up to k temporaries without lua_checkstack: the caller must have room.
// A protected operation makes its own room first; when the stack cannot grow
// it returns MF_NOROOM: its operands are popped as on any failure, and nothing
// is pushed, not even an error value.
#ifndef CLUASHIM_H
#define CLUASHIM_H

#include <stddef.h>
#include <stdint.h>
#include <lua.h>
#include <lualib.h>
#include <lauxlib.h>

/// The status of a protected operation that found no room on the stack for its
/// temporaries (the stack is at its limit, or growing it ran out of memory). Nothing
/// was pushed: unlike every other failing status, there is no error value to pop.
#define MF_NOROOM 100

// MARK: - Budgets (memory limit by the allocator, time limit by a watchdog)

/// Per-state accounting: the memory limit and what the state holds, and the time
/// limit's state, which the watchdog thread shares. Opaque: its fields are the shim's
/// own (internal.h), and the watchdog writes some of them atomically from its thread,
/// so Swift reaches it through the functions below. Reachable from every thread of
/// the state through lua_getextraspace. The Swift LuaState owns it: mf_budget_new,
/// mf_newstate with it, and mf_budget_free once mf_close_state has closed the state.
typedef struct mf_budget mf_budget;

/// A budget whose allocator will hold its state to `limit` bytes (0: no memory limit),
/// with nothing counted and no call armed. NULL if out of memory. No Lua state is touched.
mf_budget *mf_budget_new(size_t limit);
/// Frees a budget whose state is closed (or was never made). No Lua state is touched.
void mf_budget_free(mf_budget *b);
/// Bytes the state holds now, and the most it held at once since it was made or since
/// mf_budget_reset_peak. The allocator keeps both on the thread that runs the state;
/// read them there. No Lua state is touched.
size_t mf_budget_used(const mf_budget *b);
size_t mf_budget_peak(const mf_budget *b);
/// Starts the peak again from what the state holds now. No Lua state is touched.
void mf_budget_reset_peak(mf_budget *b);
/// Whether the state's last call stopped at its time limit (the watchdog's flag, which
/// a failed call leaves set so that its error reads as a timeout), clearing the flag.
/// Any thread; no Lua state is touched.
int mf_budget_take_timeout(mf_budget *b);
/// Puts back what mf_budget_take_timeout returned: a look between (a debugger's read
/// that failed) leaves the call's own timeout as it found it. No Lua state is touched.
void mf_budget_restore_timeout(mf_budget *b, int timed_out);
/// The time limit of the call armed last, in milliseconds, for the message of its
/// timeout. No Lua state is touched.
int64_t mf_budget_limit_ms(const mf_budget *b);

/// Creates a state whose allocator enforces `b->limit`. NULL if out of memory.
/// Stack: the new state's is empty.
lua_State *mf_newstate(mf_budget *b);
/// Puts the state under the watchdog: a call armed with a time limit gets a
/// stop hook only once its deadline has passed, so a script never sees a hook
/// of ours (debug.gethook) nor can remove one in time (debug.sethook). Replaces
/// coroutine.resume and coroutine.wrap with versions that tell the watchdog
/// which thread runs, and the pattern functions of `string` with a matcher that
/// stops at the deadline. Call once, after the libraries are open. Protected.
/// Stack: [-0, +0]; error: [-0, +1].
int mf_install_watchdog(lua_State *L);
/// Pushes the Lua function `arm(limit_ms)` that starts a test's deadline and returns
/// a to-be-closed guard that ends it: `local guard <close> = arm(10000)`. Past the
/// deadline, Lua code of the test stops with "FILE:LINE: test exceeded its time
/// limit ..." on every instruction (a pcall cannot swallow it) until the guard
/// closes; calls armed with their own limit meanwhile run under that limit.
/// Cannot raise. Stack: [-0, +1].
void mf_push_test_deadline(lua_State *L);
/// Milliseconds left of the test deadline armed on this thread (as the watchdog counts them),
/// or -1 when no test deadline is armed here. Raises nothing. Stack: [-0, +0].
int64_t mf_test_time_left_ms(lua_State *L);
/// Whether the test deadline armed on L has passed (for Swift waits to stop).
int mf_test_deadline_passed(lua_State *L);
/// Nonzero once the running call of this state passed its deadline. Stack: [-0, +0].
int mf_deadline_passed(lua_State *L);
/// Nonzero once a call or test of this state ran on past its deadline (by the limit,
/// and at least MF_STUCK_GRACE_MS) in code the stop hook cannot reach: the state is
/// poisoned for good. Any thread; no Lua state is touched. Stack: [-0, +0].
int mf_budget_stuck(const mf_budget *b);
/// Forgets that the state is stuck, once its stuck call has returned (closing the state
/// from its last reference): the closing is then bounded afresh. No Lua state is touched.
void mf_budget_unstick(mf_budget *b);
/// Nonzero while a call armed with a time limit, or a test's deadline, runs in this state
/// (a stuck state is freed only once it is not). Any thread; no Lua state is touched.
int mf_budget_busy(const mf_budget *b);

/// Line coverage (coverage.c): counts each line of a file's chunk (`@name`) run in this state
/// and in the coroutines it makes from now on, until the state closes. Returns 0 when out of
/// memory. Raises nothing. [-0, +0]
int mf_cover_start(lua_State *L);
/// How many files have counts.
int mf_cover_count(lua_State *L);
/// The explorer's count of new lines (guided exploration): from now on, each line of a file's
/// chunk run for the first time since this call counts once (coverage starts if it had not,
/// and its counts go on). Returns 0 when out of memory. Raises nothing. Then mf_rest_hook.
int mf_cover_fresh_start(lua_State *L);
/// The lines counted as new since the last call (or mf_cover_fresh_start), and starts again
/// from 0. Raises nothing.
int mf_cover_fresh_take(lua_State *L);
/// Sets the hook a state keeps between the watchdog's stops (debughook.c): the debugger's
/// when one serves the state, else coverage's when it counts, else none. After
/// mf_cover_start. On the state's thread.
void mf_rest_hook(lua_State *L);
/// File `i` (0-based): its name (without '@'), its counts by line (`hits[line]`, `*lines`
/// long; NULL when none ran), or NULL past the last. Valid until the state closes.
const char *mf_cover_file_at(lua_State *L, int i, const uint32_t **hits, int *lines);
/// The least time past a deadline after which a call still running counts as stuck.
#define MF_STUCK_GRACE_MS ((int64_t)2000)
/// The wall-clock backstop of a call limited to `limit_ms` of CPU time: past it the call
/// expires however little CPU it used (it blocks: a sleep, a wait, a read). Generous, so a
/// loaded machine does not trip it: the limit plus twice the limit, and at least a second.
static inline int64_t mf_backstop_ms(int64_t limit_ms) {
  return limit_ms + (2 * limit_ms > 1000 ? 2 * limit_ms : 1000);
}
/// Raises the time-limit error (for C library code that noticed the deadline).
/// Stack: [-0, +1], then raises: never returns. Only for C code running inside Lua.
int mf_raise_timeout(lua_State *L);
/// CLOCK_MONOTONIC now, in nanoseconds. No Lua state.
int64_t mf_now_ns(void);
/// Bytes of the C heap in use now (glibc's mallinfo2); -1 where the C library does not say.
int64_t mf_heap_in_use(void);
/// The longest time limit accepted, in ms (one day); longer limits saturate to it.
#define MF_MAX_TIME_LIMIT_MS ((int64_t)86400000)
static inline int64_t mf_max_time_limit_ms(void) { return MF_MAX_TIME_LIMIT_MS; }

// MARK: - Stack and macros (never raise)

/// Stack: [-0, +0].
static inline int mf_gettop(lua_State *L) { return lua_gettop(L); }
/// Stack: [-?, +?]: the top becomes `idx` (values dropped, or nils added).
static inline void mf_settop(lua_State *L, int idx) { lua_settop(L, idx); }
/// Stack: [-n, +0].
static inline void mf_pop(lua_State *L, int n) { lua_settop(L, -(n)-1); }
/// A pseudo-index: no stack.
static inline int mf_registryindex(void) { return LUA_REGISTRYINDEX; }
/// Stack: [-0, +0].
static inline int mf_isinteger(lua_State *L, int idx) { return lua_isinteger(L, idx); }
/// Stack: [-0, +0].
static inline const char *mf_tostring_raw(lua_State *L, int idx, size_t *len) {
  // Only for values of type LUA_TSTRING: no conversion, no allocation.
  return lua_tolstring(L, idx, len);
}
/// Stack: [-0, +0].
static inline int mf_type(lua_State *L, int idx) { return lua_type(L, idx); }
/// Stack: [-0, +1].
static inline void mf_pushvalue(lua_State *L, int idx) { lua_pushvalue(L, idx); }
/// Stack: [-0, +0].
static inline int mf_absindex(lua_State *L, int idx) { return lua_absindex(L, idx); }
/// Stack: [-0, +1].
static inline int mf_rawgeti_registry(lua_State *L, lua_Integer ref) {
  return lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
}

// MARK: - Protected operations (return a Lua status; the error is on the stack)

/// Opens the standard libraries and installs the warning function of the
/// standalone interpreter (off until `warn("@on")`, then `Lua warning: ` lines
/// on standard error). Stack: [-0, +0]; error: [-0, +1].
int mf_openlibs(lua_State *L);
/// Switches the collector to generational mode, as lua5.4 starts in. Stack: [-0, +0].
void mf_gc_generational(lua_State *L);
/// Loads a chunk: `mode` is "t" (text only) unless the caller asks for "b"/"bt".
/// Stack: [-0, +1]: the function, or the error message.
int mf_load(lua_State *L, const char *buf, size_t len, const char *chunkname, const char *mode);
/// The release of the Lua these shims were compiled against (LUA_VERSION_RELEASE_NUM,
/// 50404 for 5.4.4): precompiled host chunks are used only under the release that made them.
int mf_lua_release(void);
/// The function on top of the stack as bytecode (lua_dump, debug information kept) in a
/// buffer from malloc that the caller frees. Does not raise (the writer only copies
/// bytes). Returns 0, or 1 when the value is not a Lua function or memory ran out.
/// Stack: [-0, +0].
int mf_dump(lua_State *L, unsigned char **out, size_t *length);
/// Loads a file by Lua's own rules (luaL_loadfilex: a first `#` line and a
/// UTF-8 BOM skipped; `path` NULL reads standard input as `=stdin`).
/// Protected. Stack: [-0, +1]: the function, or the error message.
int mf_loadfile(lua_State *L, const char *path, const char *mode);
/// Calls the function below `nargs` arguments as lua5.4 calls a main chunk:
/// from a C frame, with lua.c's message handler, under the time budget. On
/// an error, returns its status with the message (as lua5.4 prints it) on top.
/// Stack: [-(nargs + 1), +0]; error: [-(nargs + 1), +1]; MF_NOROOM: [-(nargs + 1), +0].
int mf_docall(lua_State *L, int nargs, int64_t limit_ms);
/// mf_docall keeping `nresults` results (LUA_MULTRET: all) on success.
/// Stack: [-(nargs + 1), +nresults]; error: [-(nargs + 1), +1]; MF_NOROOM: [-(nargs + 1), +0].
int mf_docall_results(lua_State *L, int nargs, int nresults, int64_t limit_ms);
/// From now on, Ctrl-C (SIGINT) during an mf_docall raises the catchable error
/// `interrupted!` in it, and a second one ends the process, as in lua.c (for the
/// process that runs lua5.4's command line: the handler is the process's).
void mf_catch_interrupts(void);
/// Prints the version line `lua5.4 -v` prints (LUA_COPYRIGHT) on standard output.
void mf_print_version(void);
/// `-W`: turns warnings on, as `warn("@on")` does. Never raises. Stack: [-0, +0].
void mf_warnings_on(lua_State *L);
/// `-l`: `global = require(module)`, the call as mf_docall makes it.
/// Stack: [-0, +0]; error: [-0, +1] (the message).
int mf_dolibrary(lua_State *L, const char *global, const char *module, int64_t limit_ms);
/// lua.c's pushargs: pushes the global `arg` table's items 1...#arg above the
/// loaded script on top, and sets `count`. Error (`'arg' is not a table`): the
/// script is replaced by the message. Stack: [-0, +count]; error: [-1, +1].
int mf_pushargs(lua_State *L, int *count);
/// `-i`: the read-eval-print loop on standard input, each line's call as mf_docall
/// makes it; `echo` prints each line read after its prompt (as lua5.4's line
/// editor does when standard input is not a terminal). Returns at the end of the
/// input. Stack: [-0, +0]; error (out of memory, a raising `_PROMPT`): [-0, +1].
int mf_repl(lua_State *L, int64_t limit_ms, int echo);
/// mf_openlibs after setting `LUA_NOENV` in the registry when `ignore_env` (`-E`):
/// the package library then ignores LUA_PATH and LUA_CPATH.
int mf_openlibs_env(lua_State *L, int ignore_env);
/// Calls the function below `nargs` arguments with a message handler that
/// appends the traceback. Arms the time budget for `limit_ms` (<= 0: none)
/// unless a call is already running. Stack: [-(nargs + 1), +nresults];
/// error: [-(nargs + 1), +1] (nil when the script caught the time-limit stop:
/// mf_budget_take_timeout says so).
int mf_pcall(lua_State *L, int nargs, int nresults, int64_t limit_ms);
/// Resumes a coroutine with the time budget armed (same rules as mf_pcall).
/// Stack (of the coroutine L): [-nargs, +*nresults] (on the first resume the
/// function below the arguments is popped too); error: the error value on top
/// of L's unwound stack, and above it, when it is a string and L has room, the
/// message with L's traceback: [-?, +1 or +2].
int mf_resume(lua_State *L, lua_State *from, int nargs, int *nresults, int64_t limit_ms);
/// Creates a new thread, protected; *out receives it.
/// Stack: [-0, +1]: the thread; error: [-0, +1].
int mf_newthread(lua_State *L, lua_State **out);
/// Closes a suspended or dead coroutine (lua_closethread / lua_resetthread).
/// Stack (of co): emptied; error: the error object left on it.
int mf_closethread(lua_State *co, lua_State *from);
/// Closes a suspended or dead coroutine from Swift under the time limit: a
/// pending `__close` that loops is stopped. Stack (of co): as mf_closethread.
int mf_close_coroutine(lua_State *co, lua_State *from, int64_t limit_ms);
/// Sets `mt.__close` (mt below the count table on top) to the closer that counts
/// `count[1]` down: how read-only views know their call is running.
/// Stack: [-2, +0]; error: [-2, +1].
int mf_install_view_close(lua_State *L);
/// lua_close under the time limit: a finalizer that loops is stopped (its error
/// becomes a warning, as Lua does with errors in __gc) and the close finishes.
void mf_close_state(lua_State *L, int64_t limit_ms);
/// luaL_ref on the registry, protected (the registry may grow): the value on
/// top goes into a registry slot, *outRef receives it.
/// Stack: [-1, +0]; error: [-1, +1] (the value is dropped).
int mf_ref(lua_State *L, int *outRef);
/// Frees a registry slot. Stack: [-0, +0].
void mf_unref(lua_State *L, int ref);
/// How many values the registry holds (freed ref slots left out); -1 when the stack cannot grow.
int64_t mf_registry_refs(lua_State *L);
/// Full garbage collection, protected, with its finalizers under the time limit
/// (`limit_ms`, 0 for none). Stack: [-0, +0]; error: [-0, +1].
int mf_gc_collect(lua_State *L, int64_t limit_ms);

// MARK: - Building values (Swift -> Lua), in one protected call

enum mf_opcode {
  MF_OP_NIL = 0, MF_OP_BOOL, MF_OP_INT, MF_OP_NUM, MF_OP_STR,
  MF_OP_TABLE,     // a = array size hint, i = hash size hint; pushes a table
  MF_OP_SET,       // pops key and value, rawsets into the table below them
  MF_OP_SETI,      // pops a value, rawseti into the table below it at index i
  MF_OP_REF,       // pushes registry[i]
  MF_OP_ARRAYMT,   // marks the table on top as a JSON array (empty arrays stay arrays)
  MF_OP_OBJECT,    // pushes a full userdata holding pointer `s`, metatable registry[i]
};

typedef struct mf_op {
  int32_t code;
  int32_t a;
  int64_t i;
  double d;
  const char *s;
  size_t len;
} mf_op;

/// Runs `ops` in a protected call; on success the values they built are on
/// the stack (`*pushed` of them). On failure one error value is pushed.
/// `*done` (when not NULL) tells how many ops finished, on failure too: the
/// pointer of an MF_OP_OBJECT below it belongs to its userdata (whose __gc
/// releases it), one at or above it still belongs to the caller.
/// Stack: [-0, +*pushed]; error: [-0, +1]; MF_NOROOM: [-0, +0].
int mf_push_ops(lua_State *L, const mf_op *ops, int count, int *pushed, int *done);
/// Pushes getmetatable(v) and setmetatable(t, mt) as C functions that `__metatable` does
/// not stop, for the host's own Lua code (the markers are kept from scripts by it).
/// Light C functions: never raises, never allocates. Stack: [-0, +2]; needs 2 slots.
void mf_push_raw_metatable_functions(lua_State *L);
/// Pushes `rearm()`: gives the call armed on this thread (mf_pcall's time limit) its whole
/// limit again from now, unless the deadline passed already. For the host's own Lua code
/// that runs two of a feature's calls in one protected call (each keeps its own limit).
/// A light C function: never raises, never allocates. Stack: [-0, +1]; needs 1 slot.
void mf_push_rearm(lua_State *L);
/// Pushes `params(f)` (views.c): how many named parameters the Lua function `f` declares
/// and whether it also takes `...` (anything not a Lua function: 0, true). The host's Lua
/// hands a state view only to a handler that can reach it. A light C function: never
/// raises, never allocates. Stack: [-0, +1]; needs 1 slot.
void mf_push_params(lua_State *L);
/// Pushes `fits(shape, k, v)` (views.c): whether a write of `v` at key `k` of a table whose
/// view shape is `shape` may wait in Lua until the state is read (a plain scalar the shape's
/// type codes take there; dispatch.lua's `finish`). A light C function to push; it raises
/// only on memory, inside its caller's protected call. Stack: [-0, +1]; needs 1 slot.
void mf_push_fits(lua_State *L);
/// Pushes `flat(shapes, m)` (shapes.c): FlatShapes.matches for the host's own Lua code,
/// with `shapes` as FlatShapes.luaTable makes them. Raises only on memory, inside its
/// caller's protected call. A C closure over the interned "type", made in a protected
/// call: returns its status (the error on the stack instead when not LUA_OK).
/// Stack: [-0, +1]; needs 2 slots.
int mf_push_flat_check(lua_State *L);
/// 1 if the table at `idx` has the JSON-array metatable (mf.array()'s marker).
/// Raw access only: never raises. Stack: [-0, +0]; needs 2 slots.
int mf_is_json_array(lua_State *L, int idx);
/// Gives the table at `idx`, which has no metatable, the JSON-array one (what `mf.array()`
/// sets), so that it encodes as `[]` while empty; 1 when done, 0 when it already had a
/// metatable or memory ran out making the marker. Never raises. Stack: [-0, +0]; needs 2 slots.
int mf_mark_json_array(lua_State *L, int idx);
/// 1 if the table at `idx` has the JSON-array metatable, 2 if it has another
/// metatable (`mf.object()` marks with one), 0 if none. Never allocates.
/// Stack: [-0, +0]; needs 2 slots.
int mf_json_kind(lua_State *L, int idx);
/// 0: no metatable; 1: mf.array()'s marker; 2: mf.object()'s marker; 3: any other metatable.
/// Raw access only: never raises, never allocates. Stack: [-0, +0]; needs 3 slots.
int mf_metatable_kind(lua_State *L, int idx);
/// Registers the read-only views' metatable and their view -> table map (mt below targets).
/// Raw sets into the registry: never raises. Stack: [-2, +0]; returns 0 with
/// nothing popped when the stack has no room.
int mf_register_readonly(lua_State *L);
/// Registers the write views' (what `reduce` gets) metatable and view -> table map, as above.
/// Stack: [-2, +0], or 0 and nothing popped.
int mf_register_write_views(lua_State *L);
/// Installs the write views' `__index` and `__newindex` (C functions) in the metatable.
/// Stack: metatable, targets (view -> table), log, stored, wrap (the Lua function making a
/// nested view: wrap(table, parentView, key)), all popped. Writes are logged raw as
/// (view, key, old) in `log`, tables stored as (table, view, key) in `stored`; each list
/// keeps its count at [0] (set to 0 here). Protected. [-5, +0 or +1 (the error), m]
int mf_install_write_view_access(lua_State *L);
/// Registers the function that rawget, rawset and rawlen call on a view, as
/// `refuse(name, view, key, level)` (key nil for rawlen; level: for `error`, the script code
/// that called, past Moonflow's own Lua); it raises, naming the field.
/// A raw set into the registry: never raises. Stack: [-1, +0]; returns 1.
int mf_register_view_refuser(lua_State *L);
/// Registers the host's callout, the function called (once per mf_want_callout, with no
/// arguments, its errors dropped) before Lua next calls out into code that may block: a
/// Swift function, os.execute, the io library's functions and file methods. A raw set into
/// the registry: never raises. Stack: [-1, +0]; returns 1.
int mf_register_callout(lua_State *L);
/// Asks for the callout before the next call out of Lua. Never raises; no stack effect.
void mf_want_callout(lua_State *L);
/// When the value at `idx` is a read-only or a write view, pushes the table it shows and returns 1;
/// else returns 0 and pushes nothing. Raw access only: never raises, never allocates.
/// Stack: [-0, +1] when it returns 1, [-0, +0] when 0.
int mf_readonly_target(lua_State *L, int idx);

// MARK: - JSON straight from Lua (json.c)

/// The bytes `mf_json_encode` writes: malloc'd, grown as needed; the caller frees `data`.
typedef struct mf_json_out {
  char *data;
  size_t len;
  size_t cap;
} mf_json_out;

/// Writes `d` (finite) as JSON into `buffer` (`capacity` bytes) and returns the length,
/// or 0 when it cannot. Swift supplies it, so numbers read exactly as Swift writes them.
typedef int (*mf_json_float_text)(double d, char *buffer, int capacity);

/// `mf_json_encode` gave up: the value is copied into Swift and written from the copy
/// (whose errors name the path of what JSON cannot hold).
#define MF_JSON_SLOW 1
/// As deep as tables nest in `mf_json_encode` (LuaState.maxDepth).
#define MF_JSON_MAX_DEPTH 200

/// Appends the value at `idx` to `out` as compact JSON with sorted keys: a table whose
/// keys are exactly 1..n as an array, an empty table as `[]` with the array marker and
/// `{}` without, a view of the state as the table it shows. Raw reads only: never
/// raises, never allocates in Lua. Returns 0, or MF_JSON_SLOW for anything unusual
/// (NaN, a function, a cycle, a foreign metatable, a boolean key, invalid UTF-8, deep
/// nesting, no memory), with `out` then holding a partial text to discard.
/// Stack: [-0, +0].
int mf_json_encode(lua_State *L, int idx, mf_json_out *out, mf_json_float_text float_text);

// MARK: - JSON straight into Lua (json_read.c)

/// Parses the `len` bytes at `text` as a JSON number into `out`; returns 1, or 0 when the
/// number is not finite. Swift supplies it, so floats read exactly as Swift's reader reads them.
typedef int (*mf_json_parse_float)(const char *text, size_t len, double *out);

/// Parses `len` bytes of JSON straight into a Lua value, in a protected call: objects and
/// arrays as tables (a `null` member absent, a `null` element a hole, an array with no
/// element marked as an array), integers exact when they fit in 64 bits, strings as their
/// bytes. Returns LUA_OK with the value pushed; MF_JSON_SLOW with nothing pushed when it
/// gives up (a mistake in the text, nesting deeper than MF_JSON_MAX_DEPTH, a float
/// `parse_float` refuses), for the Swift reader to parse and name the mistake; or an error
/// status with the message pushed (no memory). Stack: [-0, +1] or [-0, +0] on MF_JSON_SLOW.
int mf_json_decode(lua_State *L, const char *text, size_t len, mf_json_parse_float parse_float);

// MARK: - Swift functions

/// What a Swift function returns in place of a result count when it failed;
/// the trampoline raises the error after Swift has returned.
enum mf_swift_failure {
  /// An error value is on top of the stack: raised as it is.
  MF_SWIFT_RAISE = -1,
  /// A message string is on top: raised with the caller's `file:line: ` in
  /// front of it, as luaL_error does.
  MF_SWIFT_RAISE_WHERE = -2,
  /// Nothing is on top: the stack had no room for the error. The trampoline
  /// drops the call's own values and raises a memory error in their place.
  MF_SWIFT_RAISE_NOROOM = -3,
};

/// Swift implements these two; set once at start-up. `call` runs on the
/// stack of the calling Lua function: its arguments, and what it pushes.
/// `call` returns the number of results it pushed, or one of `mf_swift_failure`.
typedef int (*mf_swift_call_fn)(void *box, lua_State *L);
typedef void (*mf_swift_release_fn)(void *box);
void mf_set_swift_callbacks(mf_swift_call_fn call, mf_swift_release_fn release);

/// Pushes a Lua C closure that calls Swift box `box` (already retained; the
/// closure's userdata releases it when collected). Protected. If it fails,
/// the caller still owns `box`. Stack: [-0, +1]; error: [-0, +1].
int mf_push_swift_function(lua_State *L, void *box);
/// Creates a metatable for Swift objects in the registry: __gc releases the
/// object, __index is the table on top of the stack (popped), __name = name.
/// *outRef receives its registry ref. Stack: [-1, +0]; error: [-1, +1].
int mf_new_object_metatable(lua_State *L, const char *name, int *outRef);
/// If the value at idx is a Swift object userdata, returns its box pointer.
/// Raw access only: never raises. Stack: [-0, +0]; needs 2 slots.
void *mf_object_box(lua_State *L, int idx);

// MARK: - Reading tables raw (never raise, no metamethod runs)

/// lua_next on the table at idx; the key is on top. Returns 0 at the end.
/// Safe because keys come from the previous call (never raises here).
/// Stack: [-1, +2] (key, value), or [-1, +0] at the end.
static inline int mf_next(lua_State *L, int idx) { return lua_next(L, idx); }
/// Stack: [-0, +0].
static inline lua_Unsigned mf_rawlen(lua_State *L, int idx) { return lua_rawlen(L, idx); }
/// Stack: [-0, +1].
static inline int mf_rawgeti(lua_State *L, int idx, lua_Integer n) { return lua_rawgeti(L, idx, n); }
/// Stack: [-0, +0] (grows it; 0 when it cannot).
static inline int mf_checkstack(lua_State *L, int n) { return lua_checkstack(L, n); }
/// Stack: [-0, +0].
static inline const void *mf_topointer(lua_State *L, int idx) { return lua_topointer(L, idx); }

// MARK: - Table access for the runtime (protected, raw)

/// t[k] = v with t at tidx, k and v popped (k below v). Raw, protected.
/// Stack: [-2, +0]; error: [-2, +1].
int mf_rawset(lua_State *L, int tidx);
/// Pushes rawget(t, key) where the key is a string. Protected (interning allocates).
/// Stack: [-0, +1]; error: [-0, +1].
int mf_rawgetfield(lua_State *L, int tidx, const char *key);
/// Sets a global from the value on top (popped). Protected.
/// Stack: [-1, +0]; error: [-1, +1].
int mf_setglobal(lua_State *L, const char *name);
/// Pushes a global. Protected (runs _ENV metamethods).
/// Stack: [-0, +1]; error: [-0, +1].
int mf_getglobal(lua_State *L, const char *name);

/// `file:line` of the function `level` frames up (1: the caller of the running
/// C function) into `buf`. Returns 0 when unknown (a C function, no line).
/// Stack: [-0, +0].
int mf_where(lua_State *L, int level, char *buf, size_t size);

/// `file:line` where the Lua function at `idx` is defined, into `buf`. Returns
/// 0 when it is not a Lua function. Stack effect: none (needs one free slot).
int mf_function_where(lua_State *L, int idx, char *buf, size_t size);

// MARK: - Profiles

/// Sets package.preload[name] = the function on top (popped). Protected.
/// Stack: [-1, +0]; error: [-1, +1].
int mf_preload(lua_State *L, const char *name);

// MARK: - The debugger's view of a paused thread (debugger.c)

/// One frame of a thread's stack, as lua_getinfo("Sln") gives it; the strings belong
/// to the frame (copy them before the thread runs on).
/// What a stopped thread does next, as the debugger's stop function returns it.
/// MF_RESUME_TRAVEL: the debugger goes back by running the feature again in a new state; this
/// one is abandoned: its hook raises MF_TRAVEL_ERROR at every instruction from then on, so
/// the thread's stack unwinds (no pcall of a plugin's keeps the error) to the protected call
/// the host made, which returns it, and any later call of the state fails at once.
enum {
  MF_NOT_STOPPED = -1, MF_RESUME_RUN = 0, MF_RESUME_IN = 1, MF_RESUME_OVER = 2, MF_RESUME_OUT = 3,
  MF_RESUME_TRAVEL = 4
};
#define MF_TRAVEL_ERROR "moonflow: the debugger went back in time; this run is abandoned"
/// Why a thread stopped. MF_STOP_MARK: the count mf_debug_seek named as its mark (the debugger
/// picks where to go back to); MF_STOP_ARRIVED: the count it named to stop at.
enum {
  MF_STOP_BREAKPOINT = 1, MF_STOP_STEP = 2, MF_STOP_PAUSE = 3, MF_STOP_EXCEPTION = 4, MF_STOP_MARK = 5,
  MF_STOP_ARRIVED = 6
};
/// The host's stop (debughook.c calls it on the stopped Lua thread `L`, inside a hook, at
/// `line`; `message` is an error's, for MF_STOP_EXCEPTION): returns an MF_RESUME_* once the
/// debugger lets the thread go, or MF_NOT_STOPPED when it did not stop (a false condition,
/// a log point). Must not raise; it may read L (mf_frames, mf_variables, mf_evaluate).
typedef int (*mf_debug_stop_fn)(void *ctx, lua_State *L, int reason, int line, const char *message);
/// Serves L's state with a debugger (debughook.c): a call-and-return hook, lines only in
/// functions with a breakpoint, and `stop` at each breakpoint, step or pause. On the state's
/// thread, between calls. Returns 0 when out of memory. Raises nothing.
int mf_debug_start(lua_State *L, mf_debug_stop_fn stop, void *ctx);
/// Replaces the breakpoint lines of the file at `path` (absolute: a chunk named by a
/// relative path matches the absolute path that ends with it). Any thread. 0: out of memory.
int mf_debug_set_lines(lua_State *L, const char *path, const int *lines, int count);
/// Ends the debugger's service of L's state (its hook does nothing from then on) and frees
/// its breakpoints: before the state closes, with the other threads' calls held off.
void mf_debug_end(lua_State *L);
/// Stops at the next line of a plugin's file run. Any thread.
void mf_debug_pause(lua_State *L);
/// Going back (debughook.c): with `on`, every line event of a plugin's file is taken and
/// counted (the position a re-run of the same inputs reaches again). On the state's thread.
void mf_debug_count_lines(lua_State *L, int on);
/// The line events counted so far, and (into `stack_depth` and `trail`, when given) how deep L's
/// stack is and the path the counted lines took (a hash of each line and its function's first
/// line, in order: another path gives another trail at the same count). On the stopped thread.
long long mf_debug_position(lua_State *L, int *stack_depth, unsigned long long *trail);
/// On the way to a point of a re-run: at count `to` (0: none) stop with MF_STOP_ARRIVED; at
/// count `mark` (0: none) stop with MF_STOP_MARK, mf_debug_found then naming the last count
/// before it at stack depth `mark_depth` or outer; with `entry`, the first count of the last
/// call entered at depth `mark_depth` (the start of the frame there at the mark: restarting
/// it). Until either, breakpoints are still given to the stop function (to weigh and count)
/// and nothing else stops. On the state's thread.
void mf_debug_seek(lua_State *L, long long to, long long mark, int mark_depth, int entry);
/// mf_debug_found: that count, and (into `trail`, when given) the trail there.
long long mf_debug_found(lua_State *L, unsigned long long *trail);
/// Which errors stop a served state: MF_ERRORS_UNCAUGHT, those no handler catches (the run
/// reports them), MF_ERRORS_CAUGHT, those a plugin's own pcall, xpcall or coroutine.resume
/// catches; either stops at the failing line, before the stack unwinds. Any thread.
enum { MF_ERRORS_UNCAUGHT = 1, MF_ERRORS_CAUGHT = 2 };
void mf_debug_stop_on_errors(lua_State *L, int which);
/// The MF_ERRORS_ flags mf_debug_stop_on_errors last set; 0 for a state not debugged. Any thread.
int mf_debug_errors(lua_State *L);
/// Around a debugger's stop, on the stopped thread: the time limit (a call's, a test's)
/// is held, and resumes with what was left (watchdog.c).
void mf_budget_hold(lua_State *L);
void mf_budget_release(lua_State *L);

typedef struct mf_frame {
  const char *source;  // the chunk's name ("@plugins/counter/init.lua", "=[C]")
  int line;            // the line running now; -1 when not known (a C function)
  int linedefined;     // where the function starts; 0 for a main chunk, -1 for C
  const char *name;    // how the caller named the function, or NULL
  const char *what;    // "Lua", "C" or "main"
} mf_frame;

/// Fills `out` with up to `capacity` frames of L's stack, from `level` (0: the running
/// function) outwards; returns how many. [-0, +0], raises nothing, allocates nothing.
int mf_frames(lua_State *L, int level, mf_frame *out, int capacity);

/// Pushes the variables of frame `level` of L (as for mf_frames): its locals when `kind`
/// is 'l' (temporaries left out), its upvalues when 'u' (`_ENV` left out), or the fields
/// of the table at `holder[ref]` when 't' (the array part first, at most 1000 entries).
/// Each is a table {name, text, type[, ref]}: `text` is made without metamethods (a
/// string quoted and cut at 200 bytes, a table's entry count, a function's file:line);
/// a table value is appended to the table at `holder` and `ref` is its index there, for
/// a later 't'. Protected: [-0, +1] the list; error: [-0, +1].
int mf_variables(lua_State *L, int holder, int level, int kind, lua_Integer ref);

/// Pushes the value of the Lua expression `expr` (text, `len` bytes) as the frame at `level`
/// of L sees it, as a one-entry list like mf_variables' (its `name` is the expression).
/// The expression reads the frame's locals, upvalues and its function's globals; every
/// table it reaches is read-only to it (a write raises), so a look changes nothing.
/// Protected: [-0, +1] the list; error: [-0, +1] (a syntax error, a failed read).
int mf_evaluate(lua_State *L, int holder, int level, const char *expr, size_t len);
// An evaluation runs at most 2000 ms (as a call's time limit counts them: the thread's CPU
// time), armed as a call of its own while the stopped feature's limit stays held: past it,
// it fails with "evaluate ran longer than 2000 ms and was stopped; the run is as it was",
// which no pcall or xpcall inside the expression catches; the stopped thread's time limit
// and hook are then as they were. Nothing stops in the debugger's hook during it.

/// As mf_evaluate, but keeps no table: the entry has no `ref` (a breakpoint's condition, a
/// log point's `{expr}`). Protected: [-0, +1] the list; error: [-0, +1].
int mf_evaluate_unkept(lua_State *L, int level, const char *expr, size_t len);

/// Empties the holder at `holder` (a table mf_variables and mf_evaluate keep tables in): every
/// entry set to nil, so tables shown before are no longer kept by it, and the next one kept
/// is at `ref` 1 again. Protected: [-0, +0]; error: [-0, +1] (not a table).
int mf_release_shown(lua_State *L, int holder);

#endif
