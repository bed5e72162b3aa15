// The debugger's hook: breakpoints by file and line, stepping, pause, and the stop at an
// error (one no handler of the plugin's catches, or one a plugin's pcall catches). Set
// only on a state a debugger serves (mf_debug_start); on any other no hook is set and
// nothing here runs.
//
// What it costs: the hook takes calls and returns only, and looks at each called
// function's file and lines; only while the running function has a breakpoint in it (or
// a step or a pause is under way) does it take lines too. A stop calls the host's
// function (Swift) on the stopped Lua thread, with the time limit held (watchdog.c), and
// goes on as that function says: run, or step in, over or out. The watchdog owns the
// hook while it stops a call; when it lets go it puts this one back (mf_rest_hook). While
// the debugger evaluates an expression on a stopped thread (mf_debug_evaluating), nothing
// stops: no breakpoint, step, pause or error inside the evaluation.
// Chooses the hook a state keeps between the watchdog's stops (mf_rest_hook): this one,
// coverage's or none. Calls coverage.c (its hook, and the lines it counts when both run).
#include "internal.h"
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct mf_bp_file {
  char *path;   // as the debugger gave it: an absolute path
  size_t len;
  int *lines;
  int count;
} mf_bp_file;

typedef struct mf_debug {
  pthread_mutex_t lock;     // guards files and count, which the debugger's thread changes
  mf_bp_file *files;
  int nfiles;
  int any;                  // nfiles, read without the lock: a call with no breakpoint set takes none
  int pause;                // asked from another thread: stop at the next line
  int errors;               // MF_ERRORS_*: which errors stop
  // The step under way, on the Lua thread that resumed it.
  int step;
  int step_depth;
  lua_State *step_thread;
  mf_debug_stop_fn stop;
  void *ctx;
  char *cwd;                // the working directory at the start, for chunk names with `..`
  int evaluating;           // evaluations under way (mf_debug_evaluating): no stop inside one
  // Going back (mf_debug_count_lines, mf_debug_seek): on the Lua thread only.
  int counting;             // every line of a plugin's file is taken and counted
  long long lines;          // the line events of plugins' files counted since counting began
  long long seek;           // at this count, stop (MF_STOP_ARRIVED); 0: none
  long long mark;           // at this count, ask the debugger where to go (MF_STOP_MARK); 0: none
  int mark_depth;           // before the mark: the last count at this depth or outer is `found`
  int mark_entry;           // instead: `found` is the first count of the last call entered at mark_depth
  lua_State *entered;       // that call, entered on this thread and not yet at its first line
  long long found;
  // The path the counted lines took: each line and the first line of its function, folded
  // in (FNV-1a); a re-run that took another path has another trail at the same count.
  unsigned long long trail;
  unsigned long long found_trail;  // the trail at `found`
  int abandoned;            // the debugger left this state for a re-run: every hook raises
} mf_debug;

static mf_debug *debug_of(lua_State *L) { return (mf_debug *)mf_budget_of(L)->debug; }

/// Whether a chunk is a plugin's or a spec's file, which a debugger shows and stops in: a file
/// (`@plugins/a.lua`) that is neither Moonflow's own (`@[moonflow ...]`) nor an installed Lua
/// library (a `share/lua/` or `lib/lua/` tree, where Debian and LuaRocks put busted and
/// luassert), or a file a plugin source gave as text (`=dev:counter/init.lua`,
/// `=memory:greeter/init.lua`: a `.lua` name; Moonflow's own text chunks, `=moonflow.task`
/// and the like, have none). LuaFrame.isFile (LuaKit) is the same rule.
static int visible(const char *source, size_t srclen) {
  if (srclen < 2) return 0;
  if (source[0] == '@')
    return strncmp(source, "@[moonflow", 10) != 0 && !strstr(source, "/share/lua/") && !strstr(source, "/lib/lua/");
  return source[0] == '=' && srclen > 5 && memcmp(source + srclen - 4, ".lua", 4) == 0;
}

/// Whether a chunk's source (`@plugins/a.lua`, `@./a.lua`, `@/abs/a.lua`, `=dev:a/init.lua`)
/// names the file at `path` (absolute): the same path, or one that ends in the chunk's
/// relative name.
static int names_file(const char *source, size_t srclen, const char *path, size_t len) {
  if (!visible(source, srclen)) return 0;
  const char *s = source + 1;
  size_t n = srclen - 1;
  while (n > 2 && s[0] == '.' && s[1] == '/') { s += 2; n -= 2; }
  if (s[0] == '/') return n == len && memcmp(s, path, n) == 0;
  return n < len && path[len - n - 1] == '/' && memcmp(path + len - n, s, n) == 0;
}

/// A relative chunk name with a `..` step (`@../app/plugins/a.lua`, from `moonflow run
/// ../app/plugins/a`), made absolute from `cwd` with its `.` and `..` steps resolved, into
/// `out` as `@/abs/app/plugins/a.lua`: what names_file compares with a breakpoint's path.
/// Returns its length; 0 when the name has no `..` step or the result does not fit.
static size_t resolved_name(const char *cwd, const char *source, size_t srclen, char *out, size_t cap) {
  if (!cwd || srclen < 4 || source[0] != '@' || source[1] == '/') return 0;
  const char *rel = source + 1;
  if (strncmp(rel, "../", 3) != 0 && !strstr(rel, "/../")) return 0;
  size_t len = strlen(cwd);
  if (len + 2 > cap) return 0;
  out[0] = '@';
  memcpy(out + 1, cwd, len + 1);
  len++;
  while (len > 1 && out[len - 1] == '/') out[--len] = 0;  // "/" itself becomes "@"
  for (const char *p = rel; *p;) {
    const char *end = strchr(p, '/');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    if (n == 2 && p[0] == '.' && p[1] == '.') {
      while (len > 1 && out[len - 1] != '/') len--;    // drop the last step
      if (len > 1) len--;
      out[len] = 0;
    } else if (n > 0 && !(n == 1 && p[0] == '.')) {
      if (len + 1 + n + 1 > cap) return 0;
      out[len++] = '/';
      memcpy(out + len, p, n);
      len += n;
      out[len] = 0;
    }
    p += n + (end ? 1 : 0);
  }
  return len;
}

/// Whether a breakpoint lies in lines [first, last] of the chunk `source` (under the lock).
static int has_breakpoint(mf_debug *d, const char *source, size_t srclen, int first, int last) {
  char resolved[PATH_MAX + 2];
  size_t n = resolved_name(d->cwd, source, srclen, resolved, sizeof resolved);
  if (n > 0) { source = resolved; srclen = n; }
  for (int i = 0; i < d->nfiles; i++) {
    mf_bp_file *f = &d->files[i];
    if (!names_file(source, srclen, f->path, f->len)) continue;
    for (int j = 0; j < f->count; j++)
      if (f->lines[j] >= first && f->lines[j] <= last) return 1;
  }
  return 0;
}

/// Whether the function of frame `ar` (filled with "S") needs the line events: a
/// breakpoint in it, or a step or pause under way.
static int wants_lines(mf_debug *d, lua_Debug *ar) {
  if (d->step || __atomic_load_n(&d->pause, __ATOMIC_RELAXED)) return 1;
  if (d->counting && visible(ar->source, ar->srclen)) return 1;
  if (!__atomic_load_n(&d->any, __ATOMIC_ACQUIRE) || !visible(ar->source, ar->srclen)) return 0;
  int first = ar->linedefined, last = ar->lastlinedefined;
  if (first <= 0) { first = 0; last = INT_MAX; }  // a main chunk: all of it
  pthread_mutex_lock(&d->lock);
  int has = has_breakpoint(d, ar->source, ar->srclen, first, last);
  pthread_mutex_unlock(&d->lock);
  return has;
}

static void debug_hook(lua_State *L, lua_Debug *ar);

static void set_mask(lua_State *L, int lines) {
  int mask = LUA_MASKCALL | LUA_MASKRET;
  if (lines || mf_budget_of(L)->cover) mask |= LUA_MASKLINE;
  mf_debug *d = debug_of(L);
  if (d && d->abandoned) {  // an instruction of any code raises the travel error
    lua_sethook(L, debug_hook, mask | LUA_MASKCOUNT, 1);
    return;
  }
  if (lua_gethook(L) != debug_hook || lua_gethookmask(L) != mask) lua_sethook(L, debug_hook, mask, 0);
}

/// The error that takes an abandoned state's calls back to the host: raised from this hook
/// at every instruction, so no pcall of a plugin's keeps it (the next instruction after one
/// raises it again) and the protected call the host made returns it as its status.
static int raise_travel(lua_State *L) {
  lua_pushliteral(L, MF_TRAVEL_ERROR);
  return lua_error(L);
}

/// How deep L's stack is now.
static int depth(lua_State *L) {
  lua_Debug ar;
  int d = 0;
  while (lua_getstack(L, d, &ar)) d++;
  return d;
}

/// Stops: hands the thread to the debugger with the time limit held, and takes up what it
/// says to do next. MF_NOT_STOPPED (a condition false, a log point) changes nothing.
static void stop_here(lua_State *L, mf_debug *d, int reason, int line, const char *message) {
  int next = d->stop(d->ctx, L, reason, line, message);
  if (next == MF_NOT_STOPPED) return;
  if (next == MF_RESUME_TRAVEL) {  // the hook raises from its next event on (debug_hook)
    d->abandoned = 1;
    d->step = 0;
    set_mask(L, 1);
    return;
  }
  d->step = next;
  d->step_thread = L;
  d->step_depth = next == MF_RESUME_RUN ? 0 : depth(L);
}

/// At a line: whether a step under way ends here (`L` at `level_depth`).
static int step_ends(mf_debug *d, lua_State *L, int level_depth) {
  switch (d->step) {
    case MF_RESUME_IN: return 1;
    case MF_RESUME_OVER: return L != d->step_thread || level_depth <= d->step_depth;
    case MF_RESUME_OUT: return L != d->step_thread || level_depth < d->step_depth;
    default: return 0;
  }
}

static int on_breakpoint_line(mf_debug *d, lua_Debug *ar) {
  if (!__atomic_load_n(&d->any, __ATOMIC_ACQUIRE)) return 0;
  pthread_mutex_lock(&d->lock);
  int on = has_breakpoint(d, ar->source, ar->srclen, ar->currentline, ar->currentline);
  pthread_mutex_unlock(&d->lock);
  return on;
}

static void debug_hook(lua_State *L, lua_Debug *ar) {
  mf_debug *d = debug_of(L);
  if (!d) return;
  if (d->abandoned) {
    if (lua_gethookcount(L) != 1) set_mask(L, 1);  // a coroutine that kept the hook it had
    // At an instruction of Lua code only: a C function called as the stack unwinds (a test's
    // deadline guard, a view's closer: their __close) must run, as under the watchdog's stop.
    if (ar->event == LUA_HOOKCOUNT || ar->event == LUA_HOOKLINE) raise_travel(L);
    return;
  }
  if (d->evaluating) return;
  switch (ar->event) {
    case LUA_HOOKCALL:
    case LUA_HOOKTAILCALL:
      if (d->mark_entry && d->mark) d->entered = depth(L) == d->mark_depth ? L : NULL;
      if (lua_getinfo(L, "S", ar)) set_mask(L, wants_lines(d, ar));
      return;
    case LUA_HOOKRET: {
      if (d->mark_entry && d->entered == L && depth(L) == d->mark_depth) d->entered = NULL;
      lua_Debug caller;  // the frame returned to
      int known = lua_getstack(L, 1, &caller) && lua_getinfo(L, "S", &caller);
      if ((d->step == MF_RESUME_OVER || d->step == MF_RESUME_OUT) && L == d->step_thread &&
          !(known && visible(caller.source, caller.srclen)) && depth(L) <= d->step_depth)
        d->step = MF_RESUME_IN;  // out of the plugin's code, into Moonflow's: on to the next plugin line that runs
      if (known) set_mask(L, wants_lines(d, &caller));
      else set_mask(L, d->step != 0);
      return;
    }
    case LUA_HOOKLINE:
      break;
    default:
      return;
  }
  if (mf_budget_of(L)->cover) mf_cover_line(L, ar);
  if (!lua_getinfo(L, "S", ar) || !visible(ar->source, ar->srclen)) return;
  int line = ar->currentline;
  if (d->counting) {
    long long n = ++d->lines;
    d->trail = (d->trail ^ ((unsigned long long)line * 65599u + (unsigned long long)ar->linedefined)) *
               1099511628211ull;
    if (d->mark && n < d->mark) {
      if (!d->mark_entry) {
        if (depth(L) <= d->mark_depth) { d->found = n; d->found_trail = d->trail; }
      } else if (d->entered == L && depth(L) == d->mark_depth) {
        d->found = n;  // the first line of the call: where restarting that frame goes
        d->found_trail = d->trail;
        d->entered = NULL;
      }
    }
    if (n == d->mark || n == d->seek) {
      int reason = n == d->mark ? MF_STOP_MARK : MF_STOP_ARRIVED;
      d->mark = d->seek = 0;
      __atomic_store_n(&d->pause, 0, __ATOMIC_RELAXED);
      stop_here(L, d, reason, line, NULL);
      if (d->abandoned) raise_travel(L);
      if (lua_getinfo(L, "S", ar)) set_mask(L, wants_lines(d, ar));
      return;
    }
    if (d->mark || d->seek) {  // on the way to a point before: only breakpoints are weighed (none stops)
      if (on_breakpoint_line(d, ar)) stop_here(L, d, MF_STOP_BREAKPOINT, line, NULL);
      if (d->abandoned) raise_travel(L);
      return;
    }
  }
  if (__atomic_exchange_n(&d->pause, 0, __ATOMIC_RELAXED)) {
    stop_here(L, d, MF_STOP_PAUSE, line, NULL);
  } else if (d->step && step_ends(d, L, depth(L))) {
    int reason = MF_STOP_STEP;
    d->step = 0;
    stop_here(L, d, reason, line, NULL);
  } else if (on_breakpoint_line(d, ar)) {
    stop_here(L, d, MF_STOP_BREAKPOINT, line, NULL);
  } else {
    return;
  }
  if (d->abandoned) raise_travel(L);
  if (lua_getinfo(L, "S", ar)) set_mask(L, wants_lines(d, ar));
}

void mf_rest_hook(lua_State *L) {
  mf_debug *d = debug_of(L);
  lua_Debug ar;
  if (d && lua_getstack(L, 0, &ar) && lua_getinfo(L, "S", &ar)) set_mask(L, wants_lines(d, &ar));
  else if (d) set_mask(L, 0);
  else if (mf_budget_of(L)->cover) lua_sethook(L, mf_cover_hook, LUA_MASKLINE, 0);
  else lua_sethook(L, NULL, 0, 0);
}

int mf_debug_start(lua_State *L, mf_debug_stop_fn stop, void *ctx) {
  mf_budget *b = mf_budget_of(L);
  if (!b->debug) {
    mf_debug *d = calloc(1, sizeof *d);
    if (!d) return 0;
    pthread_mutex_init(&d->lock, NULL);
    char here[PATH_MAX];
    if (getcwd(here, sizeof here)) d->cwd = strdup(here);
    b->debug = d;
  }
  mf_debug *d = b->debug;
  d->stop = stop;
  d->ctx = ctx;
  mf_rest_hook(L);  // coroutines made later inherit it
  return 1;
}

int mf_debug_set_lines(lua_State *L, const char *path, const int *lines, int count) {
  mf_debug *d = debug_of(L);
  if (!d) return 0;
  size_t len = strlen(path);
  int *copy = NULL;
  if (count > 0) {
    copy = malloc((size_t)count * sizeof *copy);
    if (!copy) return 0;
    memcpy(copy, lines, (size_t)count * sizeof *copy);
  }
  pthread_mutex_lock(&d->lock);
  int i = 0;
  while (i < d->nfiles && !(d->files[i].len == len && memcmp(d->files[i].path, path, len) == 0)) i++;
  if (i == d->nfiles) {
    char *name = count > 0 ? malloc(len + 1) : NULL;
    mf_bp_file *grown = count > 0 ? realloc(d->files, (size_t)(d->nfiles + 1) * sizeof *grown) : NULL;
    if (grown) d->files = grown;
    if (count == 0 || !name || !grown) {
      pthread_mutex_unlock(&d->lock);
      free(name);
      free(copy);
      return count == 0;
    }
    memcpy(name, path, len + 1);
    d->files[i] = (mf_bp_file){ name, len, NULL, 0 };
    d->nfiles++;
    __atomic_store_n(&d->any, d->nfiles, __ATOMIC_RELEASE);
  }
  free(d->files[i].lines);
  d->files[i].lines = copy;
  d->files[i].count = count;
  pthread_mutex_unlock(&d->lock);
  return 1;
}

void mf_debug_pause(lua_State *L) {
  mf_debug *d = debug_of(L);
  if (d) __atomic_store_n(&d->pause, 1, __ATOMIC_RELAXED);
}

void mf_debug_stop_on_errors(lua_State *L, int which) {
  mf_debug *d = debug_of(L);
  if (d) __atomic_store_n(&d->errors, which, __ATOMIC_RELAXED);
}

int mf_debug_errors(lua_State *L) {
  mf_debug *d = debug_of(L);
  return d ? __atomic_load_n(&d->errors, __ATOMIC_RELAXED) : 0;
}

static int stops_on(lua_State *L, mf_debug *d, int which) {
  return d && !d->evaluating && (__atomic_load_n(&d->errors, __ATOMIC_RELAXED) & which) && lua_checkstack(L, 4);
}

/// An error object's text, through its __tostring; "(error object is a table value)" without one.
static int error_text(lua_State *L) {
  if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) return 1;
  lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  return 1;
}

/// Stops at an error (its message on top), at the innermost frame of a plugin's file among
/// levels [level, below); with none of a plugin's there, does nothing.
static void stop_at_error(lua_State *L, mf_debug *d, int level, int below) {
  lua_Debug ar;
  int line = 0;
  for (int l = level; l < below && lua_getstack(L, l, &ar); l++) {
    if (lua_getinfo(L, "Sl", &ar) && visible(ar.source, ar.srclen)) {
      line = ar.currentline;
      break;
    }
  }
  if (line <= 0) return;
  int top = lua_gettop(L);
  const char *message = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
  if (!message) {  // a table with a __tostring (busted's failures), as Lua's own message handler shows it
    lua_pushcfunction(L, error_text);
    lua_pushvalue(L, top);
    if (lua_pcall(L, 1, 1, 0) == LUA_OK && lua_type(L, -1) == LUA_TSTRING) message = lua_tostring(L, -1);
    else message = "(an error object with no text)";
  }
  stop_here(L, d, MF_STOP_EXCEPTION, line, message);
  lua_settop(L, top);
  d->step = 0;  // the error goes on up (or to the pcall): there is no line to step to
}

void mf_debug_error(lua_State *L, int level) {
  mf_debug *d = debug_of(L);
  if (stops_on(L, d, MF_ERRORS_UNCAUGHT)) stop_at_error(L, d, level, INT_MAX);
}

int mf_debug_catches(lua_State *L, int watches, int *call_depth) {
  mf_debug *d = debug_of(L);
  int errors = d && !d->evaluating ? __atomic_load_n(&d->errors, __ATOMIC_RELAXED) & watches : 0;
  if (!errors) return 0;
  lua_Debug ar;
  if (lua_getstack(L, 1, &ar) && lua_getinfo(L, "S", &ar) && visible(ar.source, ar.srclen))
    return errors & MF_ERRORS_CAUGHT;
  if (!(errors & MF_ERRORS_UNCAUGHT)) return 0;
  *call_depth = depth(L);  // walked only for a call that is watched
  return MF_ERRORS_UNCAUGHT;
}

void mf_debug_caught(lua_State *L, int level, int which, int call_depth) {
  mf_debug *d = debug_of(L);
  if (!which || !stops_on(L, d, which)) return;
  // Caught by code not the plugin's: only a plugin's frame inside the call (above the
  // catching call's own, which is at level depth - call_depth) is where the error is its.
  stop_at_error(L, d, level, which == MF_ERRORS_UNCAUGHT && call_depth > 0 ? depth(L) - call_depth : INT_MAX);
}

void mf_debug_count_lines(lua_State *L, int on) {
  mf_debug *d = debug_of(L);
  if (!d) return;
  d->counting = on;
  mf_rest_hook(L);
}

long long mf_debug_position(lua_State *L, int *stack_depth, unsigned long long *trail) {
  mf_debug *d = debug_of(L);
  if (stack_depth) *stack_depth = depth(L);
  if (trail) *trail = d ? d->trail : 0;
  return d ? d->lines : 0;
}

void mf_debug_seek(lua_State *L, long long to, long long mark, int mark_depth, int entry) {
  mf_debug *d = debug_of(L);
  if (!d) return;
  d->seek = to;
  d->mark = mark;
  d->mark_depth = mark_depth;
  d->mark_entry = entry;
  d->entered = NULL;
  d->found = 0;
}

long long mf_debug_found(lua_State *L, unsigned long long *trail) {
  mf_debug *d = debug_of(L);
  if (trail) *trail = d ? d->found_trail : 0;
  return d ? d->found : 0;
}

void mf_debug_evaluating(lua_State *L, int on) {
  mf_debug *d = debug_of(L);
  if (d) d->evaluating += on ? 1 : -1;
}

void mf_debug_end(lua_State *L) { mf_debug_free(mf_budget_of(L)); }

void mf_debug_free(mf_budget *b) {
  mf_debug *d = b->debug;
  if (!d) return;
  b->debug = NULL;
  for (int i = 0; i < d->nfiles; i++) {
    free(d->files[i].path);
    free(d->files[i].lines);
  }
  free(d->files);
  free(d->cwd);
  pthread_mutex_destroy(&d->lock);
  free(d);
}
