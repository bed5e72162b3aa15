// What the shim's C files share; not part of the module's interface. Grouped by
// the file that defines each. Files call each other one way only, so each can be
// read and changed knowing only what is below it:
//   profiles.c -> match.c -> watchdog.c -> views.c;  watchdog.c -> platform.c
//   profiles.c, protected.c, standalone.c, budgets.c -> watchdog.c;  watchdog.c, protected.c -> debughook.c -> coverage.c
//   protected.c, standalone.c -> messages.c;  protected.c -> warnings.c, views.c, pipes.c, callouts.c;  pipes.c -> callouts.c;  trampoline.c -> callouts.c;  json.c -> values.c, views.c;  debugger.c -> watchdog.c, views.c, debughook.c;  json_read.c -> values.c
#ifndef CLUASHIM_INTERNAL_H
#define CLUASHIM_INTERNAL_H
#include "CLuaShim.h"
#include <pthread.h>
#include <time.h>

/// The budget CLuaShim.h declares opaque (see mf_budget_new): zeroed, then `limit` set.
/// The fields the watchdog shares with the thread in the state (timed_out, stuck,
/// running, unanswered, test_timed_out) are read and written with __atomic builtins.
struct mf_budget {
  size_t used;          // bytes currently allocated by this state
  size_t peak;          // highest `used` seen
  size_t limit;         // 0 = no memory limit
  int64_t deadline_ns;  // CLOCK_MONOTONIC deadline of the running call, 0 = none
  int64_t limit_ms;     // the time limit in force, for the message
  int timed_out;        // set by the watchdog when the running call passed its deadline
  int watched;          // the watchdog serves this state (mf_install_watchdog)
  // Owned by the watchdog (under its lock): the thread running Lua code now,
  // the armed list, and when the watchdog looks again.
  lua_State *running;
  pthread_t os_thread;
  struct mf_budget *next_armed;
  int64_t recheck_ns;
  // A test's deadline (`moonflow test`), around many calls that keep their own
  // limit: while no call is armed, the stop hook raises the test's error.
  int64_t test_deadline_ns;  // 0 = no test armed
  int64_t test_limit_ms;
  int test_timed_out;
  int64_t test_recheck_ns;
  pthread_t test_thread;
  // A test's time is counted as a call's is: its thread's CPU time (test_cpu_clock), looked
  // at when it could have used its limit, with a wall-clock backstop for a test that waits.
  clockid_t test_cpu_clock;
  int test_cpu_ok;           // test_cpu_clock is the test thread's
  int test_expired;          // the test used its limit (or reached the backstop): under the lock
  int64_t test_cpu_start_ns; // its CPU time when armed
  int64_t test_backstop_ns;  // CLOCK_MONOTONIC time the test expires at whatever its CPU time
  int64_t test_held_cpu_ns;  // its CPU time as a debugger's stop began, -1 for none
  struct mf_budget *next_test;
  char test_where[240];      // "file:line: " where the test was stopped, once known
  lua_State *closing;        // the main thread mf_close_state is closing, NULL otherwise
  // The collector between calls (watchdog.c, mf_gc_release): how many calls from the
  // host run now, and whether the debt lent while none runs is still out.
  int gc_calls;
  int gc_lent;
  // The last resort (watchdog.c): a call or test still running this long after its
  // deadline is in code no hook reaches (a blocking C or Swift function). The watchdog
  // sets `stuck` for good; the host then abandons the state rather than wait on it.
  int64_t stuck_ns;          // when an armed call counts as stuck, 0 = none armed
  int64_t test_stuck_ns;     // when an armed test counts as stuck
  int stuck;
  // Signals sent past a deadline that the stop-signal handler has not yet taken: past a
  // few, the thread does not take the signal (blocked), and the watchdog sets the stop
  // hook itself (watchdog.c, stop_unanswered).
  int unanswered;
  // A call's time is counted on its thread's CPU clock (where the system has one), so a
  // busy machine that runs the thread less does not trip a healthy call: the watchdog
  // looks at the clock when the call could have used its limit, and again until it has
  // or the wall-clock backstop (MF_BACKSTOP_MS) passes, for a call that blocks.
  clockid_t cpu_clock;
  int cpu_clock_ok;          // cpu_clock is the armed thread's
  int64_t cpu_start_ns;      // its CPU time when armed (a reading at most a 16th of the limit older)
  int64_t backstop_ns;       // CLOCK_MONOTONIC time the call expires at whatever its CPU time
  int expired;               // the call used its limit (or reached the backstop): under the lock
  // The host's callout (callouts.c): asked for, and running now. The thread in the state only.
  int callout_wanted;
  int in_callout;
  // Line coverage (coverage.c), while `moonflow test --coverage` runs: NULL otherwise.
  void *cover;
  // The debugger's breakpoints and steps (debughook.c), while one serves the state.
  void *debug;
  // A debugger's stop holds the deadlines (mf_budget_hold): the watchdog skips this state,
  // and the release moves every deadline on by the time held (and the CPU start by the CPU
  // the debugger's reads used), so a call resumes with what it had left.
  int held;
  int64_t held_since_ns;
  int64_t held_cpu_ns;
};

/// Runs the library function that upvalue 1 of the running C closure holds, in the
/// closure's own call frame: a wrapper that ends with it stays invisible, since the
/// function's argument errors name it and its argument as Lua's own do (`bad argument
/// #1 to 'read'`, counting from the method's self as Lua does) and a traceback shows no
/// frame of the wrapper's. Only for a C function with no upvalues of its own (as
/// mf_is_plain_cfunction tells), which never reads the wrapper's.
static inline int mf_tail_original(lua_State *L) {
  return lua_tocfunction(L, lua_upvalueindex(1))(L);
}

/// Whether the value at `index` is a C function with no upvalues: one mf_tail_original
/// can run in another closure's frame.
static inline int mf_is_plain_cfunction(lua_State *L, int index) {
  if (lua_tocfunction(L, index) == NULL) return 0;
  if (lua_getupvalue(L, index, 1) == NULL) return 1;
  lua_pop(L, 1);  // the upvalue it pushed
  return 0;
}

/// For a protected operation: unless L's stack has room for `n` more values, pops the
/// `operands` it takes (as any failure does) and returns MF_NOROOM, pushing nothing.
#define MF_NEED_ROOM(L, n, operands) \
  do { if (!lua_checkstack((L), (n))) { lua_pop((L), (operands)); return MF_NOROOM; } } while (0)

/// The budget of the state L belongs to (any of its threads): mf_newstate (budgets.c)
/// stores it in the extra space, which every new thread copies. Inline, so that the
/// watchdog, which the allocator calls, reads it without calling budgets.c back.
static inline mf_budget *mf_budget_of(lua_State *L) {
  return *(mf_budget **)lua_getextraspace(L);
}

// MARK: - watchdog.c

/// Arms the deadline for an outermost call on L; returns 1 if this call armed it.
int mf_arm(lua_State *L, int64_t limit_ms);
/// Ends what mf_arm started (no-op when `armed` is 0).
void mf_disarm(lua_State *L, int armed);
/// What mf_evaluation_begin found of a state's time limit (an armed call, a held one, a
/// stop under way, the thread running), which mf_evaluation_end puts back as it was.
typedef struct mf_evaluation {
  mf_budget *armed_here;
  lua_State *running;
  int listed, held, timed_out, unanswered, expired, cpu_clock_ok;
  clockid_t cpu_clock;
  int64_t deadline_ns, limit_ms, recheck_ns, backstop_ns, stuck_ns, cpu_start_ns;
  pthread_t os_thread;
} mf_evaluation;
/// Arms a debugger's evaluation on L's state as a call of its own, `limit_ms` of this
/// thread's CPU time as a call's limit is (with its wall-clock backstop), to run on `co`
/// (the debugger's hook it copied from L taken off): past it the stop hook raises on every
/// instruction in it and in the coroutines it runs, and the matcher and the wrapped library
/// functions stop, as for a call. A test's deadline is not looked at meanwhile, and an
/// evaluation that blocks never makes the state stuck. Whatever was armed or held is saved
/// in `saved`. Pair it with mf_evaluation_end, with nothing that can raise between. Never
/// raises. [-0, +0]
void mf_evaluation_begin(lua_State *L, lua_State *co, int64_t limit_ms, mf_evaluation *saved);
/// Ends the evaluation mf_evaluation_begin armed and puts back what it saved, exactly (the
/// armed call, the hold, a stop already under way, the running thread); returns whether the
/// evaluation's limit passed. Never raises. [-0, +0]
int mf_evaluation_end(lua_State *L, const mf_evaluation *saved);
/// Around a call from the host that mf_arm did not arm (no limit, or inside an armed
/// one): the collector runs during every call from the host and waits between them,
/// so a finalizer (`__gc`) runs only inside a call, under its deadline when it has one.
void mf_gc_release(lua_State *L);
void mf_gc_hold(lua_State *L);
/// Once the watchdog serves L: holds the collector until the first call.
void mf_gc_hold_first(lua_State *L);
/// Called by the allocator as lua_close frees the main thread (see mf_close_state).
void mf_state_freed(mf_budget *b);
/// Frees a closed state's coverage counts (coverage.c).
void mf_cover_free(mf_budget *b);
/// Coverage's hook, and what it does at a line (coverage.c): the debugger's hook counts
/// through mf_cover_line when both run.
void mf_cover_hook(lua_State *L, lua_Debug *ar);
void mf_cover_line(lua_State *L, lua_Debug *ar);
/// Frees a closed state's breakpoints (debughook.c).
void mf_debug_free(mf_budget *b);
/// Around a debugger's evaluation (debugger.c), on the stopped thread: `on` 1 as it starts,
/// 0 as it ends (they nest). Meanwhile the debugger's hook does nothing (no breakpoint,
/// step, pause or error stops inside an evaluation, and it counts no lines). Never raises.
void mf_debug_evaluating(lua_State *L, int on);
/// At an error no handler catches, before the stack unwinds (the message on top, the
/// failing code `level` frames up): a debugger that stops on errors stops here
/// (debughook.c). Never raises. [-0, +0]
void mf_debug_error(lua_State *L, int level);
/// In pcall, xpcall or coroutine.resume (watchdog.c), as it is called: the filter among
/// `watches` (MF_ERRORS_*; pcall and coroutine.resume watch only caught errors) that stops
/// at an error it catches, or 0. MF_ERRORS_CAUGHT when a plugin's code calls it (while the
/// editor asked for every error); MF_ERRORS_UNCAUGHT when other code does (a test framework
/// catching a spec's failure: no handler of the plugin's catches it), with `*call_depth` set
/// to the call's depth, as only the frames inside the call count. Never raises.
int mf_debug_catches(lua_State *L, int watches, int *call_depth);
/// At an error such a call caught, before the stack unwinds (the message on top, the
/// failing code `level` frames up), with what mf_debug_catches said (`call_depth` 0: every
/// frame of L counts, as in a coroutine's own stack). Never raises. [-0, +0]
void mf_debug_caught(lua_State *L, int level, int which, int call_depth);
/// Around lua_resume(co, L, ...): tell the watchdog which thread runs.
void mf_before_resume(lua_State *co);
void mf_after_resume(lua_State *L);
/// Pushes the time-limit message, "time limit of N ms exceeded" (N: the limit in
/// force), without a place: the one text of it on the C side. Raising, mf_raise_timeout
/// puts the running code's `file:line` before it. [-0, +1, m]
void mf_push_timeout_message(lua_State *L);
/// Starts the watchdog thread on first use; 0 when it could not start.
int mf_start_watchdog(void);
/// Replaces coroutine.resume, wrap and close, pcall, xpcall, table.sort, table.move and string.rep with
/// versions that keep to the time limit, in the libraries of the package.loaded table
/// on top (left there). Allocates: only inside a protected call. [-0, +0, m]
void mf_install_timed_functions(lua_State *L);

// MARK: - messages.c

/// `msg` (`len` bytes), or when longer than a few KB its head cut at a character boundary
/// with the whole size said, pushed (and returned). Allocates: only inside a protected
/// call or a message handler. [-0, +(0|1), m]
const char *mf_bounded_message(lua_State *L, const char *msg, size_t len);

// MARK: - platform.c

/// Readies `cond` for mf_platform_cond_wait_until.
void mf_platform_cond_init(pthread_cond_t *cond);
/// Waits on `cond` (with `lock` held) until signalled or until `deadline_ns` on mf_now_ns's clock.
void mf_platform_cond_wait_until(pthread_cond_t *cond, pthread_mutex_t *lock, int64_t deadline_ns);
/// The signal the watchdog sends a thread whose call passed its deadline.
int mf_platform_stop_signal(void);
/// The calling thread's CPU clock, readable from other threads: 1 and `*clock` set, or 0
/// where the system has none (a call is then timed on the wall clock).
int mf_platform_thread_cpu_clock(clockid_t *clock);
/// The time on a CPU clock, in ns; -1 when it cannot be read.
int64_t mf_platform_cpu_ns(clockid_t clock);

// MARK: - match.c

/// Replaces find, match, gmatch and gsub in the string table at `idx` with the
/// deadline-checking matcher.
void mf_install_matcher(lua_State *L, int idx);

// MARK: - views.c

/// The read-only views' to-be-closed closer; the stop hook lets it run.
int mf_view_close(lua_State *L);
/// Replaces the base library's rawget, rawset and rawlen in the globals with ones that
/// refuse a state view (through the refuser registered by mf_register_view_refuser) and
/// otherwise act as Lua's own. Allocates: only inside a protected call. [-0, +0, m]
void mf_install_raw_functions(lua_State *L);

// MARK: - callouts.c

/// Where Lua calls out into code that may block (the trampoline into Swift, the wrapped
/// library functions): calls the host's callout first when it asked for it. Never raises.
void mf_before_callout(lua_State *L);
/// With the libraries open: os.execute and the io functions and file methods that may
/// block call mf_before_callout first. Allocates: only inside a protected call. [-0, +0, m]
void mf_install_callouts(lua_State *L);

// MARK: - pipes.c

/// With the libraries open: io.popen notes its handles' close function, and the files'
/// __gc closes a popen handle that was never closed on a detached thread (pclose waits
/// for the child), so a collection step or lua_close does not wait for it. Allocates:
/// only inside a protected call. [-0, +0, m]
void mf_install_popen_reaping(lua_State *L);

// MARK: - values.c

/// Pushes the metatable that marks a table as a JSON array (made on first use: it may
/// allocate, so only inside a protected call). [-0, +1, m]
void mf_push_array_mt(lua_State *L);

// MARK: - warnings.c

/// Sets the standalone interpreter's warning function on L, off until `warn("@on")`.
/// Never raises.
void mf_install_warnings(lua_State *L);

#endif
