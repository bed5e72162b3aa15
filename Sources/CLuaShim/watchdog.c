// The time limit: the watchdog thread, the stop hook it sets past a deadline, a
// test's deadline, a debugger's evaluation armed as a call of its own, and the
// coroutine, pcall, xpcall, table and string.rep functions that keep to the limit
// (and let a debugger stop at an error they catch). Calls only
// views.c (the closer its stop hook lets run), debughook.c (the hook a state keeps
// between stops, and the stop at a caught error) and platform.c (the clock, the timed
// wait, the signal): the files that arm calls, the matcher and the debugger's reads
// (debugger.c) call it, so it never calls them.
#include "internal.h"
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

// One watchdog thread keeps the states whose call is armed with a deadline. A call's time
// is its thread's CPU time (call_expired): the watchdog wakes when the call could have used
// its limit at the soonest, reads the thread's CPU clock, and sleeps again for what is left,
// until the call has used it or the wall-clock backstop passes (a call that blocks).
// Nothing runs per instruction while a call is within its time: no hook is set,
// so `debug.gethook()` shows only the script's own and `debug.sethook()` has
// nothing of ours to remove. When a deadline passes, the watchdog signals the
// OS thread running that call, and the signal handler sets a stop hook on the
// Lua thread running now (lua_sethook is documented as safe to call
// asynchronously; from a signal handler the Lua thread is paused, as lua.c does
// for Ctrl-C). The hook raises the time-limit error on every instruction until
// the armed call returns, so a script's pcall cannot swallow it; the watchdog
// signals again every few ms in case a script's own debug.sethook raced with
// ours. C code that can run long on small input (the pattern matcher) polls
// mf_deadline_passed.

enum {
  STOP_MASK = LUA_MASKCOUNT | LUA_MASKCALL,
  RESIGNAL_NS = 20 * 1000 * 1000,
  // An evaluation's stop is signalled again sooner: where Lua's own xpcall is kept (a state
  // with no time limit), each of the nested calls of a handler that loops starts with hooks
  // off (the error was raised in a hook) and runs on until a signal turns them back on.
  RESIGNAL_EVALUATING_NS = 1 * 1000 * 1000,
};

// A budget's `held`: 0, or a debugger's stop holds its deadlines (mf_budget_hold: the watchdog
// skips it), or a debugger's evaluation runs, armed as a call of its own (mf_evaluation_begin:
// the watchdog watches the evaluation's deadline, never calls it stuck, and skips a test's).
enum { HELD_STOPPED = 1, HELD_EVALUATING = 2 };

// The call armed on this OS thread (cleared before its budget can go away).
static __thread mf_budget *armed_here __attribute__((tls_model("initial-exec")));
// The test whose deadline is armed on this OS thread.
static __thread mf_budget *test_here __attribute__((tls_model("initial-exec")));

static pthread_mutex_t wd_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wd_wake;
static pthread_once_t wd_once = PTHREAD_ONCE_INIT;
static int wd_signal;
static int wd_started;
static mf_budget *wd_armed;      // armed calls (under wd_lock)
static mf_budget *wd_tests;      // armed tests (under wd_lock)
static int64_t wd_sleep_until;   // when the watchdog wakes next, 0 = only when told

// What hooks cannot reach. Lua turns hooks off (the `allowhook` flag of a
// lua_State) while a hook function, a finalizer (__gc) or an error's message
// handler after an error raised in a hook runs, so a loop there would outlive
// the deadline. Past the deadline the signal handler turns the flag back on,
// and the stop hook then raises inside that code too (an error in a finalizer
// becomes a warning, one in a hook or handler goes up to the armed call). The
// flag's place is Lua 5.4's `struct lua_State` (lstate.h: the GC header,
// status, allowhook), which is not public: it is checked at start-up on a
// scratch state, and left alone if the check fails.
struct mf_state_head {
  void *next;
  unsigned char tt, marked, status, allowhook;
};
static int allowhook_known;
static int probe_seen;

static void probe_hook(lua_State *L, lua_Debug *ar) {
  (void)ar;
  probe_seen = ((struct mf_state_head *)L)->allowhook;
}

static void probe_layout(void) {
  lua_State *L = luaL_newstate();
  if (!L) return;
  struct mf_state_head *head = (struct mf_state_head *)L;
  int fresh = head->tt == LUA_TTHREAD && head->status == LUA_OK && head->allowhook == 1;
  probe_seen = -1;
  lua_sethook(L, probe_hook, LUA_MASKCOUNT, 1);
  if (luaL_loadstring(L, "local x = 1 return x") == LUA_OK) lua_pcall(L, 0, 0, 0);
  lua_sethook(L, NULL, 0, 0);
  allowhook_known = fresh && probe_seen == 0 && head->allowhook == 1;
  lua_close(L);
}

static int test_close(lua_State *L);
static int xpcall_handler(lua_State *L);
static int caught_handler(lua_State *L);
static int raise_test_timeout(lua_State *L, mf_budget *b);

/// Whether the code running now must stop: the armed call's deadline passed,
/// or, with no call armed, the test's.
static int must_stop(mf_budget *b) {
  if (b->deadline_ns != 0) return __atomic_load_n(&b->timed_out, __ATOMIC_ACQUIRE);
  return b->test_deadline_ns != 0 && __atomic_load_n(&b->test_timed_out, __ATOMIC_ACQUIRE);
}

static void stop_hook(lua_State *L, lua_Debug *ar) {
  mf_budget *b = mf_budget_of(L);
  if (!must_stop(b)) {
    mf_rest_hook(L);  // left on a coroutine by an earlier call
    return;
  }
  // The guard's __close ends the test's deadline: it must run. So must the
  // read views' closer and the pcall and xpcall handlers, which pass the stop on.
  if (ar->event == LUA_HOOKCALL && lua_getinfo(L, "f", ar)) {
    lua_CFunction f = lua_tocfunction(L, -1);
    lua_pop(L, 1);
    if (f == test_close || f == mf_view_close || f == xpcall_handler || f == caught_handler) return;
  }
  if (b->deadline_ns != 0) mf_raise_timeout(L);
  raise_test_timeout(L, b);
}

void mf_push_timeout_message(lua_State *L) {
  lua_pushfstring(L, "time limit of %d ms exceeded", (int)mf_budget_of(L)->limit_ms);
}

int mf_raise_timeout(lua_State *L) {
  luaL_where(L, 1);  // as luaL_error: the message starts at the running Lua code's file:line
  mf_push_timeout_message(L);
  lua_concat(L, 2);
  return lua_error(L);
}

int mf_deadline_passed(lua_State *L) {
  return __atomic_load_n(&mf_budget_of(L)->timed_out, __ATOMIC_RELAXED);
}

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MF_UNDER_TSAN 1
#endif
#endif

static void on_signal(int sig) {
  (void)sig;
  int saved = errno;
  mf_budget *b = armed_here ? armed_here : test_here;
  if (b) __atomic_store_n(&b->unanswered, 0, __ATOMIC_RELAXED);
  if (b && must_stop(b)) {
    lua_State *running = __atomic_load_n(&b->running, __ATOMIC_RELAXED);
    if (running) {
      lua_sethook(running, stop_hook, STOP_MASK, 1);
#ifndef MF_UNDER_TSAN
      // (Under TSan the watchdog thread sets it: see stop_from_watchdog.)
      if (allowhook_known) ((struct mf_state_head *)running)->allowhook = 1;
#endif
    }
  }
  errno = saved;
}


/// ThreadSanitizer holds a signal back until the thread calls a function it
/// intercepts, which a Lua loop never does: under it the watchdog sets the hook
/// itself, as lua_sethook permits. (Only in TSan builds: from another thread,
/// unlike from a signal handler, the Lua thread is not paused.)
static void stop_from_watchdog(mf_budget *b) {
#ifdef MF_UNDER_TSAN
  lua_State *running = __atomic_load_n(&b->running, __ATOMIC_ACQUIRE);
  if (running) {
    lua_sethook(running, stop_hook, STOP_MASK, 1);
    // As the signal handler does: a loop in a finalizer or a hook runs with hooks off.
    if (allowhook_known) ((struct mf_state_head *)running)->allowhook = 1;
  }
#else
  (void)b;
#endif
}

// The thread that runs an armed call must take the stop signal. A libdispatch worker (a
// queue host's executor, Swift concurrency's threads) starts with every signal blocked,
// so the signal never arrived there: a Lua loop under `moonflow run` on the real clock ran
// on at full speed until declared stuck, then for as long as the process lived. Each
// thread unblocks this one signal the first time it arms a call or a test.
static __thread int signal_open_here __attribute__((tls_model("initial-exec")));

static void open_stop_signal(void) {
  if (signal_open_here) return;
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, wd_signal);
  pthread_sigmask(SIG_UNBLOCK, &one, NULL);
  signal_open_here = 1;
}

/// The last resort before `stuck`: a thread that blocked the signal again after it armed
/// (an app's own code) never runs the handler, so after UNANSWERED_LIMIT signals the
/// watchdog sets the stop hook from its own thread, as lua_sethook permits (unlike from a
/// signal handler, the Lua thread is not paused then, so this is not the first resort).
enum { UNANSWERED_LIMIT = 3 };

static void signal_thread(mf_budget *b, pthread_t thread) {
  pthread_kill(thread, wd_signal);
  if (__atomic_add_fetch(&b->unanswered, 1, __ATOMIC_RELAXED) <= UNANSWERED_LIMIT) return;
  lua_State *running = __atomic_load_n(&b->running, __ATOMIC_ACQUIRE);
  if (running) lua_sethook(running, stop_hook, STOP_MASK, 1);
}

/// When a call or test that expired at `deadline` with `limit_ms` counts as stuck: past the
/// deadline by the limit again, and by at least MF_STUCK_GRACE_MS (a loaded machine is slow
/// to stop a loop that hooks do reach).
static int64_t stuck_after(int64_t deadline, int64_t limit_ms) {
  int64_t grace = limit_ms > MF_STUCK_GRACE_MS ? limit_ms : MF_STUCK_GRACE_MS;
  return deadline + grace * 1000000;
}

int mf_budget_stuck(const mf_budget *b) { return __atomic_load_n(&b->stuck, __ATOMIC_ACQUIRE); }

void mf_budget_unstick(mf_budget *b) { __atomic_store_n(&b->stuck, 0, __ATOMIC_RELEASE); }

int mf_budget_take_timeout(mf_budget *b) { return __atomic_exchange_n(&b->timed_out, 0, __ATOMIC_ACQ_REL); }

void mf_budget_restore_timeout(mf_budget *b, int timed_out) {
  __atomic_store_n(&b->timed_out, timed_out, __ATOMIC_RELEASE);
}

int64_t mf_budget_limit_ms(const mf_budget *b) { return b->limit_ms; }

int mf_budget_busy(const mf_budget *b) {
  pthread_mutex_lock(&wd_lock);
  int busy = b->deadline_ns != 0 || b->test_deadline_ns != 0;
  pthread_mutex_unlock(&wd_lock);
  return busy;
}

/// Under wd_lock, at `now`: whether a count of `limit_ms` that started at `start_ns` (and at
/// `cpu_start_ns` on `clock`, when `cpu_ok`) is used up. Its time is its thread's CPU time
/// since it started (the wall time where there is no CPU clock), so a thread a busy machine
/// runs less is not stopped early; past `backstop_ns` it is used up whatever it used (what
/// blocks or waits uses none). If not, `*recheck` gets when to look again: the soonest it
/// could have used the rest.
static int used_up(int64_t limit_ms, int64_t start_ns, int cpu_ok, clockid_t clock, int64_t cpu_start_ns,
                   int64_t backstop_ns, int64_t now, int64_t *recheck) {
  int64_t limit_ns = limit_ms * 1000000;
  int64_t used = now - start_ns;
  if (cpu_ok) {
    int64_t cpu = mf_platform_cpu_ns(clock);
    if (cpu >= 0) used = cpu - cpu_start_ns;
  }
  if (used >= limit_ns || now >= backstop_ns) return 1;
  int64_t next = now + (limit_ns - used);
  *recheck = next < backstop_ns ? next : backstop_ns;
  return 0;
}

/// An armed call whose recheck time came: whether it has used its limit (used_up).
static int call_expired(mf_budget *b, int64_t now) {
  return used_up(b->limit_ms, b->deadline_ns - b->limit_ms * 1000000, b->cpu_clock_ok, b->cpu_clock,
                 b->cpu_start_ns, b->backstop_ns, now, &b->recheck_ns);
}

/// An armed test whose recheck time came: whether it has used its limit, counted as a call's.
static int test_expired(mf_budget *b, int64_t now) {
  return used_up(b->test_limit_ms, b->test_deadline_ns - b->test_limit_ms * 1000000, b->test_cpu_ok,
                 b->test_cpu_clock, b->test_cpu_start_ns, b->test_backstop_ns, now, &b->test_recheck_ns);
}

static void *watchdog_main(void *unused) {
  (void)unused;
  pthread_mutex_lock(&wd_lock);
  for (;;) {
    int64_t now = mf_now_ns(), next = 0;
    for (mf_budget *b = wd_armed; b; b = b->next_armed) {
      if (b->held == HELD_STOPPED) continue;  // a debugger has it stopped (mf_budget_hold)
      if (b->recheck_ns <= now && !b->expired && call_expired(b, now)) {
        b->expired = 1;
        b->stuck_ns = stuck_after(now, b->limit_ms);
      }
      if (b->recheck_ns <= now && b->expired) {
        __atomic_store_n(&b->timed_out, 1, __ATOMIC_RELEASE);
        signal_thread(b, b->os_thread);
        stop_from_watchdog(b);
        b->recheck_ns = now + (b->held == HELD_EVALUATING ? RESIGNAL_EVALUATING_NS : RESIGNAL_NS);
        // The last resort: the stop hook has had its chance; the call is in code no
        // hook reaches. The host stops waiting on this state (LuaState.isStuck). Not for
        // an evaluation that blocks: it stops when it returns, and the state is not lost.
        if (now >= b->stuck_ns && b->held != HELD_EVALUATING) __atomic_store_n(&b->stuck, 1, __ATOMIC_RELEASE);
      }
      if (next == 0 || b->recheck_ns < next) next = b->recheck_ns;
    }
    for (mf_budget *b = wd_tests; b; b = b->next_test) {
      if (b->held) continue;  // stopped, or evaluating: the test's time is not the evaluation's
      if (b->test_recheck_ns <= now && !b->test_expired && test_expired(b, now)) {
        b->test_expired = 1;
        b->test_stuck_ns = stuck_after(now, b->test_limit_ms);
      }
      if (b->test_recheck_ns <= now && b->test_expired) {
        __atomic_store_n(&b->test_timed_out, 1, __ATOMIC_RELEASE);
        signal_thread(b, b->test_thread);
        stop_from_watchdog(b);
        b->test_recheck_ns = now + RESIGNAL_NS;
        if (now >= b->test_stuck_ns) __atomic_store_n(&b->stuck, 1, __ATOMIC_RELEASE);
      }
      if (next == 0 || b->test_recheck_ns < next) next = b->test_recheck_ns;
    }
    wd_sleep_until = next;
    if (next == 0) {
      pthread_cond_wait(&wd_wake, &wd_lock);
    } else {
      mf_platform_cond_wait_until(&wd_wake, &wd_lock, next);
    }
  }
  return NULL;
}

static void start_watchdog(void) {
  probe_layout();
  mf_platform_cond_init(&wd_wake);
  // SA_RESTART so system calls of the interrupted thread go on.
  wd_signal = mf_platform_stop_signal();
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(wd_signal, &sa, NULL);
  pthread_t thread;
  pthread_attr_t tattr;
  pthread_attr_init(&tattr);
  pthread_attr_setdetachstate(&tattr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&tattr, 64 * 1024);
  // The watchdog takes no signal: the host's own handling (a Dispatch signal
  // source for SIGINT reads them from a signalfd) needs them blocked in every
  // thread it did not choose, and the new thread inherits this mask.
  sigset_t all, saved;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &saved);
  wd_started = pthread_create(&thread, &tattr, watchdog_main, NULL) == 0;
  pthread_sigmask(SIG_SETMASK, &saved, NULL);
  pthread_attr_destroy(&tattr);
}

// MARK: - The collector waits between calls

// A finalizer (`__gc`) runs in whichever garbage-collection step reaches it, and a step
// runs at any allocation: outside a call too, as the host parses a chunk, pushes values
// or takes a reference, where no deadline is armed and a finalizer that loops would hang
// the host. So on a state the watchdog serves, the collector waits while no call from
// the host runs, and catches up when the next one starts (under its deadline). It waits
// by a loan of debt rather than by LUA_GCSTOP: the loan is paid back as it was lent, so
// the collector's pace is kept (LUA_GCRESTART would start a new cycle at every call),
// and a script's own collectgarbage("stop") is left as the script set it (no loan while
// the collector is stopped; none is repaid into a stopped one).
#define GC_LOAN_KB (1 << 30)

static void gc_lend(lua_State *L, mf_budget *b) {
  if (!b->watched || b->gc_lent || lua_gc(L, LUA_GCISRUNNING, 0) != 1) return;
  // -1: the collector is running a finalizer now, where lua_gc does nothing.
  if (lua_gc(L, LUA_GCSTEP, -GC_LOAN_KB) != -1) b->gc_lent = 1;
}

static void gc_repay(lua_State *L, mf_budget *b) {
  if (!b->gc_lent) return;
  b->gc_lent = 0;
  lua_gc(L, LUA_GCSTEP, GC_LOAN_KB);  // a step now if one came due meanwhile
}

void mf_gc_release(lua_State *L) {
  mf_budget *b = mf_budget_of(L);
  if (b->gc_calls++ == 0) gc_repay(L, b);
}

void mf_gc_hold(lua_State *L) {
  mf_budget *b = mf_budget_of(L);
  if (b->gc_calls > 0 && --b->gc_calls == 0) gc_lend(L, b);
}

void mf_gc_hold_first(lua_State *L) {
  mf_budget *b = mf_budget_of(L);
  if (b->gc_calls == 0) gc_lend(L, b);
}

void mf_set_running(mf_budget *b, lua_State *L) {
  __atomic_store_n(&b->running, L, __ATOMIC_SEQ_CST);
}

// A call's CPU time counts from a reading of its thread's CPU clock. Reading it is a system
// call (about 2 µs on a virtual machine, as much as a small call costs), so each thread keeps
// its last reading and reads again only when that is older than a sixteenth of the limit of
// the call it arms: a call's time then counts from at most that much before it started (it
// may stop that much early, never late), and a thread reads the clock at most 16 times per
// limit, whatever its calls cost.
static __thread int cpu_clock_known_here __attribute__((tls_model("initial-exec")));
static __thread int cpu_clock_ok_here __attribute__((tls_model("initial-exec")));
static __thread clockid_t cpu_clock_here __attribute__((tls_model("initial-exec")));
static __thread int64_t cpu_read_here __attribute__((tls_model("initial-exec")));       // the reading
static __thread int64_t cpu_read_wall_here __attribute__((tls_model("initial-exec")));  // when, 0: none

/// Sets `b`'s CPU start for a call of `limit_ms` armed at `now` on this thread (under wd_lock).
static void start_cpu_count(mf_budget *b, int64_t now, int64_t limit_ms) {
  if (!cpu_clock_known_here) {
    cpu_clock_ok_here = mf_platform_thread_cpu_clock(&cpu_clock_here);
    cpu_clock_known_here = 1;
  }
  if (cpu_clock_ok_here && (cpu_read_wall_here == 0 || now - cpu_read_wall_here > limit_ms * (1000000 / 16))) {
    int64_t cpu = mf_platform_cpu_ns(cpu_clock_here);
    if (cpu >= 0) {
      cpu_read_here = cpu;
      cpu_read_wall_here = now;
    }
  }
  b->cpu_clock = cpu_clock_here;
  b->cpu_clock_ok = cpu_clock_ok_here && cpu_read_wall_here != 0;
  b->cpu_start_ns = cpu_read_here;
}

int mf_arm(lua_State *L, int64_t limit_ms) {
  mf_budget *b = mf_budget_of(L);
  if (limit_ms <= 0 || !b->watched || b->deadline_ns != 0 || armed_here != NULL) return 0;
  if (limit_ms > MF_MAX_TIME_LIMIT_MS) limit_ms = MF_MAX_TIME_LIMIT_MS;
  b->limit_ms = limit_ms;
  __atomic_store_n(&b->timed_out, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&b->unanswered, 0, __ATOMIC_RELAXED);
  open_stop_signal();
  mf_set_running(b, L);
  int64_t now = mf_now_ns();
  int64_t deadline = now + limit_ms * 1000000;
  pthread_mutex_lock(&wd_lock);
  start_cpu_count(b, now, limit_ms);
  b->backstop_ns = now + mf_backstop_ms(limit_ms) * 1000000;
  b->expired = 0;
  b->deadline_ns = deadline;
  b->recheck_ns = deadline;
  b->stuck_ns = INT64_MAX;
  b->os_thread = pthread_self();
  b->next_armed = wd_armed;
  wd_armed = b;
  if (wd_sleep_until == 0 || deadline < wd_sleep_until) pthread_cond_signal(&wd_wake);
  pthread_mutex_unlock(&wd_lock);
  armed_here = b;
  mf_gc_release(L);  // armed first: a finalizer the catching up reaches keeps the deadline
  return 1;
}

/// A new whole limit for the call armed on this thread, from now, unless its deadline
/// has passed already (then the stop stands). For a host function that runs two of a
/// feature's calls in one protected call (handle, then reduce): each keeps its own limit.
static int rearm_k(lua_State *L) {
  mf_budget *b = mf_budget_of(L);
  if (armed_here != b) return 0;
  int64_t now = mf_now_ns();
  pthread_mutex_lock(&wd_lock);
  if (b->deadline_ns != 0 && !b->expired && !__atomic_load_n(&b->timed_out, __ATOMIC_ACQUIRE)) {
    int64_t deadline = now + b->limit_ms * 1000000;
    b->deadline_ns = deadline;
    b->recheck_ns = deadline;
    b->backstop_ns = now + mf_backstop_ms(b->limit_ms) * 1000000;
    start_cpu_count(b, now, b->limit_ms);
  }
  pthread_mutex_unlock(&wd_lock);
  return 0;
}

void mf_push_rearm(lua_State *L) { lua_pushcfunction(L, rearm_k); }

/// Takes `b` off the watchdog's armed list.
static void unlist(mf_budget *b) {
  armed_here = NULL;
  pthread_mutex_lock(&wd_lock);
  for (mf_budget **p = &wd_armed; *p; p = &(*p)->next_armed) {
    if (*p == b) { *p = b->next_armed; break; }
  }
  b->next_armed = NULL;
  b->deadline_ns = 0;
  pthread_mutex_unlock(&wd_lock);
}

void mf_state_freed(mf_budget *b) {
  __atomic_store_n(&b->running, NULL, __ATOMIC_SEQ_CST);  // the signal handler must not touch it
  if (armed_here == b) unlist(b);
  b->closing = NULL;
}

void mf_close_state(lua_State *L, int64_t limit_ms) {
  mf_budget *b = mf_budget_of(L);
  if (!mf_arm(L, limit_ms)) { lua_close(L); mf_cover_free(b); mf_debug_free(b); return; }
  b->closing = L;
  lua_close(L);  // mf_state_freed disarms as the last block goes
  mf_cover_free(b);
  mf_debug_free(b);
}

void mf_budget_hold(lua_State *L) {
  mf_budget *b = mf_budget_of(L);
  pthread_mutex_lock(&wd_lock);
  b->held = HELD_STOPPED;
  b->held_since_ns = mf_now_ns();
  b->held_cpu_ns = b->deadline_ns != 0 && b->cpu_clock_ok ? mf_platform_cpu_ns(b->cpu_clock) : -1;
  b->test_held_cpu_ns = b->test_deadline_ns != 0 && b->test_cpu_ok ? mf_platform_cpu_ns(b->test_cpu_clock) : -1;
  pthread_mutex_unlock(&wd_lock);
}

void mf_budget_release(lua_State *L) {
  mf_budget *b = mf_budget_of(L);
  pthread_mutex_lock(&wd_lock);
  if (b->held) {
    int64_t wall = mf_now_ns() - b->held_since_ns;
    if (b->deadline_ns != 0) {
      b->deadline_ns += wall;
      b->backstop_ns += wall;
      b->recheck_ns += wall;
      if (b->stuck_ns != INT64_MAX) b->stuck_ns += wall;
      int64_t cpu = b->held_cpu_ns >= 0 ? mf_platform_cpu_ns(b->cpu_clock) : -1;
      if (cpu >= 0) b->cpu_start_ns += cpu - b->held_cpu_ns;
    }
    if (b->test_deadline_ns != 0) {
      b->test_deadline_ns += wall;
      b->test_recheck_ns += wall;
      b->test_backstop_ns += wall;
      if (b->test_stuck_ns != INT64_MAX) b->test_stuck_ns += wall;
      int64_t cpu = b->test_held_cpu_ns >= 0 ? mf_platform_cpu_ns(b->test_cpu_clock) : -1;
      if (cpu >= 0) b->test_cpu_start_ns += cpu - b->test_held_cpu_ns;
    }
    b->held = 0;
    pthread_cond_signal(&wd_wake);
  }
  pthread_mutex_unlock(&wd_lock);
}

// MARK: - A debugger's evaluation: a call of its own

// An evaluation (debugger.c) runs while the feature is stopped in the debugger's hook with
// its time limit held, or inside a Swift function the feature's call called. It is armed as
// a call of its own, on the same fields a call is armed on, so everything that keeps to a
// call's limit keeps to the evaluation's: the stop hook (raising on every instruction until
// the evaluation returns, so no pcall or xpcall inside it can swallow the stop), the
// matcher's and string.rep's looks at the deadline, the pieces of table.sort and table.move.
// What was armed or held before is put back exactly afterwards; the time the evaluation took
// counts as held time when the feature was held, and as the call's own when it was not.

/// An evaluation's hook where Lua's own coroutine.resume is kept (a state with no time limit,
/// which tells the watchdog nothing), inherited by the coroutines the expression makes: every
/// 1,000 instructions it tells the watchdog which thread runs, so that the stop reaches a loop
/// in one of them, and past the limit it stops that thread itself.
static void follow_hook(lua_State *L, lua_Debug *ar) {
  (void)ar;
  mf_budget *b = mf_budget_of(L);
  if (__atomic_load_n(&b->running, __ATOMIC_RELAXED) != L) mf_set_running(b, L);
  if (!must_stop(b)) return;
  lua_sethook(L, stop_hook, STOP_MASK, 1);
  mf_raise_timeout(L);
}

void mf_evaluation_begin(lua_State *L, lua_State *co, int64_t limit_ms, mf_evaluation *saved) {
  mf_budget *b = mf_budget_of(L);
  // A state with no time limit has no watchdog of its own yet: an evaluation starts it.
  if (mf_start_watchdog()) open_stop_signal();
  int64_t now = mf_now_ns();
  pthread_mutex_lock(&wd_lock);
  saved->armed_here = armed_here;
  saved->running = __atomic_load_n(&b->running, __ATOMIC_RELAXED);
  saved->listed = b->deadline_ns != 0;
  saved->held = b->held;
  saved->timed_out = __atomic_load_n(&b->timed_out, __ATOMIC_RELAXED);
  saved->unanswered = __atomic_load_n(&b->unanswered, __ATOMIC_RELAXED);
  saved->expired = b->expired;
  saved->cpu_clock_ok = b->cpu_clock_ok;
  saved->cpu_clock = b->cpu_clock;
  saved->deadline_ns = b->deadline_ns;
  saved->limit_ms = b->limit_ms;
  saved->recheck_ns = b->recheck_ns;
  saved->backstop_ns = b->backstop_ns;
  saved->stuck_ns = b->stuck_ns;
  saved->cpu_start_ns = b->cpu_start_ns;
  saved->os_thread = b->os_thread;
  if (limit_ms > MF_MAX_TIME_LIMIT_MS) limit_ms = MF_MAX_TIME_LIMIT_MS;
  b->limit_ms = limit_ms;
  __atomic_store_n(&b->timed_out, 0, __ATOMIC_RELEASE);
  __atomic_store_n(&b->unanswered, 0, __ATOMIC_RELAXED);
  start_cpu_count(b, now, limit_ms);
  b->backstop_ns = now + mf_backstop_ms(limit_ms) * 1000000;
  b->expired = 0;
  b->deadline_ns = now + limit_ms * 1000000;
  b->recheck_ns = b->deadline_ns;
  b->stuck_ns = INT64_MAX;
  b->os_thread = pthread_self();
  if (!saved->listed) {
    b->next_armed = wd_armed;
    wd_armed = b;
  }
  b->held = HELD_EVALUATING;
  if (wd_sleep_until == 0 || b->deadline_ns < wd_sleep_until) pthread_cond_signal(&wd_wake);
  pthread_mutex_unlock(&wd_lock);
  armed_here = b;
  // Not the debugger's hook (copied from L): none until the stop, where the watchdog's own
  // coroutine functions say which thread runs; elsewhere one that follows the threads.
  if (b->watched) lua_sethook(co, NULL, 0, 0);
  else lua_sethook(co, follow_hook, LUA_MASKCOUNT, 1000);
  mf_set_running(b, co);
}

int mf_evaluation_end(lua_State *L, const mf_evaluation *saved) {
  mf_budget *b = mf_budget_of(L);
  pthread_mutex_lock(&wd_lock);
  int stopped = __atomic_load_n(&b->timed_out, __ATOMIC_ACQUIRE);
  if (!saved->listed) {
    for (mf_budget **p = &wd_armed; *p; p = &(*p)->next_armed) {
      if (*p == b) { *p = b->next_armed; break; }
    }
    b->next_armed = NULL;
  }
  b->deadline_ns = saved->deadline_ns;
  b->limit_ms = saved->limit_ms;
  b->recheck_ns = saved->recheck_ns;
  b->backstop_ns = saved->backstop_ns;
  b->stuck_ns = saved->stuck_ns;
  b->expired = saved->expired;
  b->cpu_clock_ok = saved->cpu_clock_ok;
  b->cpu_clock = saved->cpu_clock;
  b->cpu_start_ns = saved->cpu_start_ns;
  b->os_thread = saved->os_thread;
  b->held = saved->held;
  __atomic_store_n(&b->unanswered, saved->unanswered, __ATOMIC_RELAXED);
  __atomic_store_n(&b->timed_out, saved->timed_out, __ATOMIC_RELEASE);
  pthread_cond_signal(&wd_wake);  // it sleeps until the evaluation's time: what it watches changed
  pthread_mutex_unlock(&wd_lock);
  armed_here = saved->armed_here;
  mf_set_running(b, saved->running);
  return stopped;
}

// Kept here, not with the protected operations: the watchdog closes coroutines with
// it, and must not call protected.c, which calls the watchdog to arm its calls.
int mf_closethread(lua_State *co, lua_State *from) {
#if LUA_VERSION_RELEASE_NUM >= 50406
  return lua_closethread(co, from);
#else
  (void)from;
  return lua_resetthread(co);
#endif
}

int mf_close_coroutine(lua_State *co, lua_State *from, int64_t limit_ms) {
  int armed = mf_arm(from, limit_ms);
  mf_before_resume(co);  // the closing code runs on co: the stop hook goes there
  int status = mf_closethread(co, from);
  mf_after_resume(from);
  mf_disarm(from, armed);
  return status;
}

void mf_disarm(lua_State *L, int armed) {
  if (!armed) return;
  mf_budget *b = mf_budget_of(L);
  mf_gc_hold(L);
  unlist(b);
  if (b->test_deadline_ns != 0) {
    // Back in the test's own code: it stops now if its deadline passed meanwhile.
    mf_set_running(b, L);
    if (__atomic_load_n(&b->test_timed_out, __ATOMIC_ACQUIRE)) {
      lua_sethook(L, stop_hook, STOP_MASK, 1);
      return;
    }
  }
  if (lua_gethook(L) == stop_hook) mf_rest_hook(L);
}

// MARK: - A test's deadline

static int raise_test_timeout(lua_State *L, mf_budget *b) {
  if (b->test_where[0] == 0) {
    // Where the test's own code (a file, not the runner's or a library's) was stopped.
    lua_Debug info;
    for (int level = 0; lua_getstack(L, level, &info); level++) {
      if (lua_getinfo(L, "Sl", &info) && info.source[0] == '@' && info.currentline > 0) {
        snprintf(b->test_where, sizeof b->test_where, "%s:%d: ", info.short_src, info.currentline);
        break;
      }
    }
    if (b->test_where[0] == 0) snprintf(b->test_where, sizeof b->test_where, "%s", "");
  }
  lua_pushfstring(L, "%stest exceeded its time limit of %d ms",
                  b->test_where, (int)b->test_limit_ms);
  return lua_error(L);
}

static int test_close(lua_State *L) {
  mf_budget *b = mf_budget_of(L);
  if (b->test_deadline_ns == 0 || test_here != b) return 0;
  test_here = NULL;
  pthread_mutex_lock(&wd_lock);
  for (mf_budget **p = &wd_tests; *p; p = &(*p)->next_test) {
    if (*p == b) { *p = b->next_test; break; }
  }
  b->next_test = NULL;
  b->test_deadline_ns = 0;
  pthread_mutex_unlock(&wd_lock);
  __atomic_store_n(&b->test_timed_out, 0, __ATOMIC_RELEASE);
  if (lua_gethook(L) == stop_hook) mf_rest_hook(L);
  return 0;
}

static int test_arm(lua_State *L) {
  mf_budget *b = mf_budget_of(L);
  lua_Integer limit_ms = luaL_checkinteger(L, 1);
  if (limit_ms <= 0 || !b->watched || b->test_deadline_ns != 0 || armed_here != NULL) {
    lua_pushnil(L);  // nothing to close
    return 1;
  }
  lua_newtable(L);  // the guard
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, test_close);
  lua_setfield(L, -2, "__close");
  lua_setmetatable(L, -2);
  if (limit_ms > MF_MAX_TIME_LIMIT_MS) limit_ms = MF_MAX_TIME_LIMIT_MS;
  b->test_limit_ms = limit_ms;
  b->test_where[0] = 0;
  __atomic_store_n(&b->test_timed_out, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&b->unanswered, 0, __ATOMIC_RELAXED);
  open_stop_signal();
  mf_set_running(b, L);
  clockid_t clock;
  int cpu_ok = mf_platform_thread_cpu_clock(&clock);
  int64_t cpu = cpu_ok ? mf_platform_cpu_ns(clock) : -1;
  int64_t now = mf_now_ns();
  int64_t deadline = now + (int64_t)limit_ms * 1000000;
  pthread_mutex_lock(&wd_lock);
  b->test_deadline_ns = deadline;
  b->test_recheck_ns = deadline;  // the soonest it can have used its limit
  b->test_backstop_ns = now + mf_backstop_ms(limit_ms) * 1000000;
  b->test_cpu_clock = clock;
  b->test_cpu_ok = cpu_ok && cpu >= 0;
  b->test_cpu_start_ns = cpu;
  b->test_expired = 0;
  b->test_stuck_ns = INT64_MAX;  // set as it expires
  b->test_thread = pthread_self();
  b->next_test = wd_tests;
  wd_tests = b;
  if (wd_sleep_until == 0 || deadline < wd_sleep_until) pthread_cond_signal(&wd_wake);
  pthread_mutex_unlock(&wd_lock);
  test_here = b;
  return 1;
}

void mf_push_test_deadline(lua_State *L) { lua_pushcfunction(L, test_arm); }

int64_t mf_test_time_left_ms(lua_State *L) {
  mf_budget *b = mf_budget_of(L);
  pthread_mutex_lock(&wd_lock);
  int64_t left = -1;
  if (b->test_deadline_ns != 0 && test_here == b) {
    // Counted as the watchdog counts it (test_expired): the thread's CPU time when it has a
    // clock, else the wall time since the test began; the backstop bounds both.
    int64_t now = mf_now_ns(), limit = b->test_limit_ms * 1000000;
    int64_t used = now - (b->test_deadline_ns - limit);
    if (b->test_cpu_ok) {
      int64_t cpu = mf_platform_cpu_ns(b->test_cpu_clock);
      if (cpu >= 0) used = cpu - b->test_cpu_start_ns;
    }
    left = limit - used;
    if (b->test_backstop_ns - now < left) left = b->test_backstop_ns - now;
    left = left < 0 ? 0 : left / 1000000;
  }
  pthread_mutex_unlock(&wd_lock);
  return left;
}

int mf_test_deadline_passed(lua_State *L) {
  mf_budget *b = mf_budget_of(L);
  return b->test_deadline_ns != 0 && __atomic_load_n(&b->test_timed_out, __ATOMIC_ACQUIRE);
}

void mf_after_resume(lua_State *L) {
  mf_budget *b = mf_budget_of(L);
  mf_set_running(b, L);
  if (must_stop(b)) lua_sethook(L, stop_hook, STOP_MASK, 1);
}

void mf_before_resume(lua_State *co) {
  mf_budget *b = mf_budget_of(co);
  if (lua_gethook(co) == stop_hook && !must_stop(b))
    mf_rest_hook(co);  // left from an earlier call that was stopped
  mf_set_running(b, co);
}

// MARK: - coroutine.resume and coroutine.wrap that tell the watchdog who runs

/// Resumes `co` with the `narg` values on top of L. Returns the number of
/// results moved onto L, or -1 with the error value on top of L. `watched`: a
/// debugger stops at a failure first, in the coroutine's stack (mf_debug_catches).
static int resume_tracked(lua_State *L, lua_State *co, int narg, int watched) {
  if (!lua_checkstack(co, narg)) {
    lua_pushliteral(L, "too many arguments to resume");
    return -1;
  }
  lua_xmove(L, co, narg);
  int nres = 0;
  mf_before_resume(co);
  int status = lua_resume(co, L, narg, &nres);
  mf_after_resume(L);
  if (status != LUA_OK && status != LUA_YIELD) {
    if (watched && !must_stop(mf_budget_of(L))) mf_debug_caught(co, 0, watched, 0);
    lua_xmove(co, L, 1);
    return -1;
  }
  if (!lua_checkstack(L, nres + 1)) {
    lua_pop(co, nres);
    lua_pushliteral(L, "too many results to resume");
    return -1;
  }
  lua_xmove(co, L, nres);
  return nres;
}

static int co_resume(lua_State *L) {
  lua_State *co = lua_tothread(L, 1);
  luaL_argexpected(L, co != NULL, 1, "thread");
  int call_depth = 0;
  // Only a plugin's own resume is watched (see co_pcall).
  int n = resume_tracked(L, co, lua_gettop(L) - 1, mf_debug_catches(L, MF_ERRORS_CAUGHT, &call_depth));
  if (n < 0) {
    lua_pushboolean(L, 0);
    lua_insert(L, -2);
    return 2;
  }
  lua_pushboolean(L, 1);
  lua_insert(L, -(n + 1));
  return n + 1;
}

/// Closes `co` with the watchdog told that the closing code (its pending
/// `__close`s) runs there. Returns the status; on an error its value is on co.
static int close_tracked(lua_State *L, lua_State *co) {
  mf_before_resume(co);
  int status = mf_closethread(co, L);
  mf_after_resume(L);
  return status;
}

/// coroutine.close, with the closing code under the time limit.
static int co_close(lua_State *L) {
  lua_State *co = lua_tothread(L, 1);
  luaL_argexpected(L, co != NULL, 1, "thread");
  const char *what = "dead";
  if (co == L) what = "running";
  else if (lua_status(co) == LUA_YIELD) what = "suspended";
  else if (lua_status(co) == LUA_OK) {
    lua_Debug ar;
    if (lua_getstack(co, 0, &ar)) what = "normal";
    else if (lua_gettop(co) > 0) what = "suspended";
  }
  if (strcmp(what, "running") == 0 || strcmp(what, "normal") == 0)
    return luaL_error(L, "cannot close a %s coroutine", what);
  int status = close_tracked(L, co);
  if (status == LUA_OK) {
    lua_pushboolean(L, 1);
    return 1;
  }
  lua_pushboolean(L, 0);
  lua_xmove(co, L, 1);
  return 2;
}

/// xpcall's message handler, wrapped: past the deadline the stop's error goes
/// up as it is, without the script's handler (which may loop, and would run
/// with hooks off after an error raised in a hook). Upvalues 2 and 3: what
/// mf_debug_catches said, for a debugger's stop at the error first.
static int xpcall_handler(lua_State *L) {
  if (must_stop(mf_budget_of(L))) return 1;
  mf_debug_caught(L, 1, (int)lua_tointeger(L, lua_upvalueindex(2)), (int)lua_tointeger(L, lua_upvalueindex(3)));
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, 1);
  return 1;
}

/// The message handler of a pcall a debugger watches (upvalues: what mf_debug_catches said):
/// it stops at the error (not at the time limit's stop, which goes on up) and passes the
/// error on as it is.
static int caught_handler(lua_State *L) {
  if (!must_stop(mf_budget_of(L)))
    mf_debug_caught(L, 1, (int)lua_tointeger(L, lua_upvalueindex(1)), (int)lua_tointeger(L, lua_upvalueindex(2)));
  return 1;
}

/// After the call (or its resumption, when it yielded): true and the results, or false
/// and the error. `extra`: the values below `true` (a handler).
static int pcall_finish(lua_State *L, int status, lua_KContext extra) {
  if (status != LUA_OK && status != LUA_YIELD) {
    lua_pushboolean(L, 0);
    lua_pushvalue(L, -2);
    return 2;
  }
  return lua_gettop(L) - (int)extra;
}

/// pcall(f, ...) as Lua's own. While a debugger stops on every error, one that a plugin's
/// own pcall catches stops first, at the failing line. Another's pcall is not watched: code
/// that expects an error and looks at it uses pcall (luassert's `has_error`), while a
/// runner that reports what it catches uses xpcall's handler (busted's failures).
static int co_pcall(lua_State *L) {
  luaL_checkany(L, 1);
  int call_depth = 0;
  int watched = mf_debug_catches(L, MF_ERRORS_CAUGHT, &call_depth);
  lua_pushboolean(L, 1);
  lua_insert(L, 1);                        // 1 true, 2 f, 3.. args
  if (!watched) {
    int status = lua_pcallk(L, lua_gettop(L) - 2, LUA_MULTRET, 0, 0, pcall_finish);
    return pcall_finish(L, status, 0);
  }
  lua_pushinteger(L, watched);
  lua_pushinteger(L, call_depth);
  lua_pushcclosure(L, caught_handler, 2);
  lua_insert(L, 1);                        // 1 handler, 2 true, 3 f, 4.. args
  int status = lua_pcallk(L, lua_gettop(L) - 3, LUA_MULTRET, 1, 1, pcall_finish);
  return pcall_finish(L, status, 1);
}

/// xpcall(f, handler, ...) as Lua's own, with the handler wrapped: it lets a debugger stop
/// at the error first, as mf_debug_catches says (a spec's failure that busted catches).
static int co_xpcall(lua_State *L) {
  int n = lua_gettop(L);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  int call_depth = 0;
  lua_pushvalue(L, 2);
  lua_pushinteger(L, mf_debug_catches(L, MF_ERRORS_CAUGHT | MF_ERRORS_UNCAUGHT, &call_depth));
  lua_pushinteger(L, call_depth);
  lua_pushcclosure(L, xpcall_handler, 3);
  lua_replace(L, 2);                       // 1 f, 2 handler, 3.. args
  lua_pushboolean(L, 1);
  lua_pushvalue(L, 1);
  lua_rotate(L, 3, 2);                     // 1 f, 2 handler, 3 true, 4 f, 5.. args
  int status = lua_pcallk(L, n - 2, LUA_MULTRET, 2, 2, pcall_finish);
  return pcall_finish(L, status, 2);
}

// MARK: - Library calls that would run long in C

/// Beyond this many elements, table.sort without a comparator compares through
/// a C function call, where the stop hook can fire, instead of inside the sort.
enum { SORT_IN_C_MAX = 1 << 16, MOVE_CHUNK = 1 << 16 };

static int plain_less(lua_State *L) {
  lua_pushboolean(L, lua_compare(L, 1, 2, LUA_OPLT));
  return 1;
}

/// table.sort as Lua's own (upvalue 1), run in this frame: its own checks and errors, in
/// its order. Only a long table with no comparator is given plain_less.
static int table_sort(lua_State *L) {
  if (lua_type(L, 1) == LUA_TTABLE && lua_isnoneornil(L, 2) && lua_rawlen(L, 1) > SORT_IN_C_MAX) {
    lua_settop(L, 1);
    lua_pushcfunction(L, plain_less);
  }
  return mf_tail_original(L);
}

/// table.move of a long range, as calls of Lua's own on pieces of it (in the
/// order that keeps an overlapping move right), so that the stop hook can fire
/// between them: `table.move({}, 1, math.maxinteger, 2)` would loop for ages in C.
static int table_move(lua_State *L) {
  // The argument checks of Lua's own, here, so that their errors name table.move.
  lua_Integer f = luaL_checkinteger(L, 2), e = luaL_checkinteger(L, 3), t = luaL_checkinteger(L, 4);
  int dest = lua_isnoneornil(L, 5) ? 1 : 5;
  lua_Integer n = 0;
  if (e >= f) {
    luaL_argcheck(L, f > 0 || e < LUA_MAXINTEGER + f, 3, "too many elements to move");
    n = e - f + 1;
    luaL_argcheck(L, t <= LUA_MAXINTEGER - n + 1, 4, "destination wrap around");
  }
  if (n <= MOVE_CHUNK) return mf_tail_original(L);
  int backwards = t > f && t <= e && (dest == 1 || lua_compare(L, 1, 5, LUA_OPEQ));
  lua_Integer pieces = (n - 1) / MOVE_CHUNK + 1;
  for (lua_Integer i = 0; i < pieces; i++) {
    lua_Integer piece = backwards ? pieces - 1 - i : i;
    lua_Integer off = piece * MOVE_CHUNK;
    lua_Integer len = n - off < MOVE_CHUNK ? n - off : MOVE_CHUNK;
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_pushvalue(L, 1);
    lua_pushinteger(L, f + off);
    lua_pushinteger(L, f + off + len - 1);
    lua_pushinteger(L, t + off);
    lua_pushvalue(L, dest);
    lua_call(L, 5, 0);
  }
  lua_pushvalue(L, dest);
  return 1;
}

/// string.rep's longest result, as Lua's own (lstrlib.c's MAXSIZE).
#define REP_MAX (sizeof(size_t) < sizeof(int) ? (size_t)~(size_t)0 : (size_t)INT_MAX)
/// Bytes string.rep copies between two looks at the deadline.
enum { REP_CHUNK = 1 << 20 };

/// string.rep as Lua's own, but Lua's copies `s` and `sep` once per repetition, so
/// `string.rep("", math.maxinteger)` loops for ages in C making nothing. Here an empty
/// result returns at once, and a long one is made by doubling what is already copied,
/// in pieces that look at the deadline between them.
static int string_rep(lua_State *L) {
  size_t l, lsep;
  const char *s = luaL_checklstring(L, 1, &l);
  lua_Integer n = luaL_checkinteger(L, 2);
  const char *sep = luaL_optlstring(L, 3, "", &lsep);
  if (n <= 0 || l + lsep == 0) {
    lua_pushliteral(L, "");
    return 1;
  }
  if (l + lsep < l || l + lsep > REP_MAX / (lua_Unsigned)n)
    return luaL_error(L, "resulting string too large");
  size_t unit = l + lsep;
  size_t total = (size_t)n * l + (size_t)(n - 1) * lsep;
  luaL_Buffer b;
  char *p = luaL_buffinitsize(L, &b, total);
  // The result is `s .. sep` over and over, cut at `total` (the last `sep` falls off).
  memcpy(p, s, l);
  size_t done = l;
  if (done < total) {
    memcpy(p + done, sep, lsep);
    done += lsep;
  }
  while (done < total) {
    // p[done..] continues the pattern from p[done % unit], and what lies before `done`
    // is whole: copy from there, no more than is already made past that point.
    size_t from = done % unit;
    size_t k = done - from;
    if (k > total - done) k = total - done;
    if (k > REP_CHUNK) k = REP_CHUNK;
    memcpy(p + done, p + from, k);
    done += k;
    if (mf_deadline_passed(L)) mf_raise_timeout(L);
  }
  luaL_pushresultsize(&b, total);
  return 1;
}

static void wrap_table_function(lua_State *L, int lib, const char *name, lua_CFunction wrapper) {
  lua_getfield(L, lib, name);
  if (mf_is_plain_cfunction(L, -1)) {
    lua_pushcclosure(L, wrapper, 1);
    lua_setfield(L, lib, name);
  } else {
    lua_pop(L, 1);
  }
}

static int co_wrapped(lua_State *L) {
  lua_State *co = lua_tothread(L, lua_upvalueindex(1));
  int n = resume_tracked(L, co, lua_gettop(L), 0);  // an error goes on up: not caught here
  if (n >= 0) return n;
  int status = lua_status(co);
  if (status != LUA_OK && status != LUA_YIELD) {  // the coroutine failed: close it
    lua_pop(L, 1);
    status = close_tracked(L, co);
    lua_xmove(co, L, 1);
  }
  if (status != LUA_ERRMEM && lua_type(L, -1) == LUA_TSTRING) {
    luaL_where(L, 1);
    lua_insert(L, -2);
    lua_concat(L, 2);
  }
  return lua_error(L);
}

static int co_wrap(lua_State *L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  lua_State *co = lua_newthread(L);
  lua_pushvalue(L, 1);
  lua_xmove(L, co, 1);
  lua_pushcclosure(L, co_wrapped, 1);
  return 1;
}

/// With package.loaded on top, inside the protected call of mf_install_watchdog
/// (profiles.c), which then installs the matcher.
void mf_install_timed_functions(lua_State *L) {
  if (lua_getfield(L, -1, LUA_COLIBNAME) == LUA_TTABLE) {
    lua_pushcfunction(L, co_resume);
    lua_setfield(L, -2, "resume");
    lua_pushcfunction(L, co_wrap);
    lua_setfield(L, -2, "wrap");
    lua_pushcfunction(L, co_close);
    lua_setfield(L, -2, "close");
  }
  lua_pop(L, 1);
  lua_pushcfunction(L, co_pcall);
  lua_setglobal(L, "pcall");
  lua_pushcfunction(L, co_xpcall);
  lua_setglobal(L, "xpcall");
  if (lua_getfield(L, -1, LUA_TABLIBNAME) == LUA_TTABLE) {
    wrap_table_function(L, lua_gettop(L), "sort", table_sort);
    wrap_table_function(L, lua_gettop(L), "move", table_move);
  }
  lua_pop(L, 1);
  if (lua_getfield(L, -1, LUA_STRLIBNAME) == LUA_TTABLE) {
    lua_pushcfunction(L, string_rep);
    lua_setfield(L, -2, "rep");
  }
  lua_pop(L, 1);
}

int mf_start_watchdog(void) {
  pthread_once(&wd_once, start_watchdog);
  return wd_started;
}
