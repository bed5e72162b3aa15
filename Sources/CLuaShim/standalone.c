// What `moonflow exec` needs to behave as the standalone `lua5.4`: loading a
// file by Lua's rules, calling a main chunk as lua.c does, and the rest of
// lua.c's command line (-v, -l, -W, the script's arguments, -i, Ctrl-C). Calls only
// watchdog.c (to arm the time limit around the chunk) and messages.c.
#include "internal.h"
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

// A script file loads by Lua's own rules (a first line starting with `#` and a
// UTF-8 byte-order mark are skipped, NULL reads standard input), and a main chunk
// is called from a C frame with lua.c's message handler, so that tracebacks and
// error objects print as lua5.4 prints them.

static int loadfile_k(lua_State *L) {
  const char *path = (const char *)lua_touserdata(L, 1);
  const char *mode = (const char *)lua_touserdata(L, 2);
  lua_settop(L, 0);
  int status = luaL_loadfilex(L, path, mode);
  lua_pushinteger(L, status);
  return 2;
}

int mf_loadfile(lua_State *L, const char *path, const char *mode) {
  MF_NEED_ROOM(L, 3, 0);
  lua_pushcfunction(L, loadfile_k);
  lua_pushlightuserdata(L, (void *)path);
  lua_pushlightuserdata(L, (void *)mode);
  int status = lua_pcall(L, 2, 2, 0);
  if (status != LUA_OK) return status;  // out of memory: the message is on top
  status = (int)lua_tointeger(L, -1);
  lua_pop(L, 1);
  return status;
}

/// lua.c's message handler: a string gets the traceback; an object with
/// `__tostring` becomes that string alone; anything else is described.
static int standalone_msgh(lua_State *L) {
  size_t len = 0;
  const char *msg = lua_tolstring(L, 1, &len);
  if (msg == NULL) {
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) {
      msg = lua_tolstring(L, -1, &len);
      mf_bounded_message(L, msg, len);  // the string alone, as lua.c gives it (cut when huge)
      return 1;
    }
    msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    len = strlen(msg);
  }
  luaL_traceback(L, L, mf_bounded_message(L, msg, len), 1);
  return 1;
}

/// The C frame below a main chunk (the traceback's last `[C]: in ?`).
/// Stack: the function and its arguments. Returns the results, or the message.
static int main_k(lua_State *L) {
  int *status = (int *)lua_touserdata(L, lua_upvalueindex(1));
  int nresults = (int)lua_tointeger(L, lua_upvalueindex(2));
  int nargs = lua_gettop(L) - 1;
  lua_pushcfunction(L, standalone_msgh);
  lua_insert(L, 1);
  *status = lua_pcall(L, nargs, nresults, 1);
  return *status == LUA_OK ? lua_gettop(L) - 1 : 1;
}

// Ctrl-C as lua.c takes it (once mf_catch_interrupts was called): while a main chunk, an
// -e, an -l or a line of the loop runs, SIGINT sets a hook on the state that raises
// `interrupted!` at the next call, return or instruction (an error like any other, which a
// pcall catches), and puts SIGINT back to its default action, so that a second Ctrl-C ends
// a program stuck in C. The handler is installed even where SIGINT was ignored (a script
// started in the background by a shell), as lua.c installs it. A signal that reaches
// another thread is passed to the one running the call, so the hook is set from the Lua
// thread itself, as lua_sethook permits from a signal handler.

static int catch_interrupts;
static lua_State *volatile interrupt_L;
static pthread_t interrupt_thread;
static lua_Hook interrupted_hook;  // the hook the state had, put back when the error is raised
static int interrupted_mask, interrupted_count;

void mf_catch_interrupts(void) { __atomic_store_n(&catch_interrupts, 1, __ATOMIC_RELEASE); }

static void interrupt_hook(lua_State *L, lua_Debug *ar) {
  (void)ar;
  lua_sethook(L, interrupted_hook, interrupted_mask, interrupted_count);
  luaL_error(L, "interrupted!");
}

static void on_interrupt(int sig) {
  lua_State *L = interrupt_L;
  if (L == NULL) return;
  if (!pthread_equal(pthread_self(), interrupt_thread)) {
    pthread_kill(interrupt_thread, sig);
    return;
  }
  signal(sig, SIG_DFL);  // a second one ends the program
  if (lua_gethook(L) != interrupt_hook) {
    interrupted_hook = lua_gethook(L);
    interrupted_mask = lua_gethookmask(L);
    interrupted_count = lua_gethookcount(L);
  }
  lua_sethook(L, interrupt_hook, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, 1);
}

/// Takes SIGINT for the call about to run on L (on this thread); false when interrupts are
/// not caught, or a call that takes them runs already.
static int interrupts_begin(lua_State *L, sigset_t *mask) {
  if (!__atomic_load_n(&catch_interrupts, __ATOMIC_ACQUIRE) || interrupt_L != NULL) return 0;
  interrupt_thread = pthread_self();
  interrupt_L = L;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, SIGINT);
  pthread_sigmask(SIG_UNBLOCK, &one, mask);
  return 1;
}

/// After the call: SIGINT's default action, as lua.c leaves it, and this thread's mask as it was.
static void interrupts_end(lua_State *L, const sigset_t *mask) {
  signal(SIGINT, SIG_DFL);
  pthread_sigmask(SIG_SETMASK, mask, NULL);
  interrupt_L = NULL;
  if (lua_gethook(L) == interrupt_hook)  // a Ctrl-C that came as the call returned
    lua_sethook(L, interrupted_hook, interrupted_mask, interrupted_count);
}

int mf_docall_results(lua_State *L, int nargs, int nresults, int64_t limit_ms) {
  int status = LUA_OK;
  int base = lua_gettop(L) - nargs;
  MF_NEED_ROOM(L, 4, nargs + 1);
  lua_pushlightuserdata(L, &status);
  lua_pushinteger(L, nresults);
  lua_pushcclosure(L, main_k, 2);  // cannot fail for lack of stack: checked above
  lua_insert(L, base);
  sigset_t mask;
  int interrupts = interrupts_begin(L, &mask);
  int armed = mf_arm(L, limit_ms);
  int outer = lua_pcall(L, nargs + 1, LUA_MULTRET, 0);  // the results, or the message
  int stopped = armed && mf_deadline_passed(L);
  mf_disarm(L, armed);
  if (interrupts) interrupts_end(L, &mask);
  if (outer != LUA_OK) return outer;
  if (status == LUA_OK && stopped) {
    lua_settop(L, base - 1);
    mf_push_timeout_message(L);
    return LUA_ERRRUN;
  }
  return status;
}

int mf_docall(lua_State *L, int nargs, int64_t limit_ms) {
  return mf_docall_results(L, nargs, 0, limit_ms);
}

// MARK: - The rest of lua.c's command line: -v, -l, -W, the script's arguments, -i

void mf_print_version(void) {
  fputs(LUA_COPYRIGHT "\n", stdout);
  fflush(stdout);
}

void mf_warnings_on(lua_State *L) { lua_warning(L, "@on", 0); }

/// Pushes the global `require` and the module name. Protected (a metamethod on _G may raise).
static int getrequire_k(lua_State *L) {
  const char *mod = (const char *)lua_touserdata(L, 1);
  lua_settop(L, 0);
  lua_getglobal(L, "require");
  lua_pushstring(L, mod);
  return 2;
}

/// Sets the global named by the light userdata at 2 to the value at 1.
static int setglobal_k(lua_State *L) {
  const char *name = (const char *)lua_touserdata(L, 2);
  lua_settop(L, 1);
  lua_setglobal(L, name);
  return 0;
}

int mf_dolibrary(lua_State *L, const char *global, const char *module, int64_t limit_ms) {
  MF_NEED_ROOM(L, 4, 0);
  lua_pushcfunction(L, getrequire_k);
  lua_pushlightuserdata(L, (void *)module);
  int status = lua_pcall(L, 1, 2, 0);
  if (status != LUA_OK) return status;
  status = mf_docall_results(L, 1, 1, limit_ms);
  if (status != LUA_OK) return status;
  lua_pushcfunction(L, setglobal_k);
  lua_insert(L, -2);
  lua_pushlightuserdata(L, (void *)global);
  return lua_pcall(L, 2, 0, 0);
}

/// lua.c's pushargs: the global `arg`'s array part as the script's arguments.
static int pushargs_k(lua_State *L) {
  lua_settop(L, 0);
  if (lua_getglobal(L, "arg") != LUA_TTABLE)
    luaL_error(L, "'arg' is not a table");
  int n = (int)luaL_len(L, -1);
  luaL_checkstack(L, n + 3, "too many arguments to script");
  int i;
  for (i = 1; i <= n; i++)
    lua_rawgeti(L, -i, i);
  lua_remove(L, -i);
  return n;
}

int mf_pushargs(lua_State *L, int *count) {
  *count = 0;
  MF_NEED_ROOM(L, 1, 1);
  int top = lua_gettop(L);
  lua_pushcfunction(L, pushargs_k);
  int status = lua_pcall(L, 0, LUA_MULTRET, 0);
  if (status != LUA_OK) {
    lua_remove(L, -2);  // the loaded chunk: the message alone
    return status;
  }
  *count = lua_gettop(L) - top;
  return LUA_OK;
}

// The read-eval-print loop, as lua.c runs it without a line editor: the prompt
// (`_PROMPT`, `_PROMPT2`) on standard output, a line from standard input, a line
// that begins with `=` read as `return`, an expression's values printed, an
// incomplete statement continued on the next line, errors on standard error
// without the program's name. With `echo`, each line read is printed after its
// prompt, as lua5.4's line editor does when standard input is not a terminal.

typedef struct { int64_t limit_ms; int echo; } Repl;

/// Pushes the prompt's value and returns its text: any value but nil through `tostring`
/// (`__tostring` included), as lua.c shows it; nil, the default.
static const char *get_prompt(lua_State *L, int firstline) {
  if (lua_getglobal(L, firstline ? "_PROMPT" : "_PROMPT2") == LUA_TNIL) return firstline ? "> " : ">> ";
  const char *p = luaL_tolstring(L, -1, NULL);
  lua_remove(L, -2);  // the value: its text stays
  return p;
}

/// Reads a line and pushes it (without its newline); 0 at the end of input
/// (nothing pushed). Built in a Lua buffer: an allocation that raises leaks nothing.
static int pushline(lua_State *L, int firstline, const Repl *repl) {
  const char *prompt = get_prompt(L, firstline);
  fputs(prompt, stdout);
  fflush(stdout);
  lua_pop(L, 1);  // the prompt's value
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  int c, any = 0;
  while ((c = getc(stdin)) != EOF) {
    any = 1;
    if (c == '\n') break;
    luaL_addchar(&b, (char)c);
  }
  luaL_pushresult(&b);
  if (!any) { lua_pop(L, 1); return 0; }
  size_t l;
  const char *line = lua_tolstring(L, -1, &l);
  if (repl->echo) { fwrite(line, 1, l, stdout); fputs("\n", stdout); fflush(stdout); }
  if (firstline && l > 0 && line[0] == '=') {
    lua_pushfstring(L, "return %s", line + 1);
    lua_remove(L, -2);
  }
  return 1;
}

static int addreturn(lua_State *L) {
  const char *line = lua_tostring(L, -1);
  const char *retline = lua_pushfstring(L, "return %s;", line);
  int status = luaL_loadbufferx(L, retline, strlen(retline), "=stdin", "t");
  if (status == LUA_OK) lua_remove(L, -2);
  else lua_pop(L, 2);
  return status;
}

/// Whether a syntax error says the text ended early (then the message is popped).
static int incomplete(lua_State *L, int status) {
  if (status == LUA_ERRSYNTAX) {
    size_t lmsg;
    const char *msg = lua_tolstring(L, -1, &lmsg);
    size_t marklen = sizeof("<eof>") - 1;
    if (lmsg >= marklen && strcmp(msg + lmsg - marklen, "<eof>") == 0) {
      lua_pop(L, 1);
      return 1;
    }
  }
  return 0;
}

/// Returns the status; -2 when the input ended inside an incomplete statement
/// (nothing pushed; lua5.4 then reports a message it no longer has).
static int multiline(lua_State *L, const Repl *repl) {
  for (;;) {
    size_t len;
    const char *line = lua_tolstring(L, 1, &len);
    int status = luaL_loadbufferx(L, line, len, "=stdin", "t");
    if (!incomplete(L, status)) return status;
    if (!pushline(L, 0, repl)) return -2;
    lua_pushliteral(L, "\n");
    lua_insert(L, -2);
    lua_concat(L, 3);
  }
}

/// -1 at the end of input; else the status, with the chunk (or message) at 1.
static int loadline(lua_State *L, const Repl *repl) {
  lua_settop(L, 0);
  if (!pushline(L, 1, repl)) return -1;
  int status = addreturn(L);
  if (status != LUA_OK) status = multiline(L, repl);
  lua_remove(L, 1);
  return status;
}

/// A line's chunk (at 1, alone on the stack) called as lua.c's docall calls it:
/// straight from the loop's C frame, with lua.c's message handler, under the time
/// budget. Leaves the results, or the message.
static int repl_docall(lua_State *L, int64_t limit_ms) {
  lua_pushcfunction(L, standalone_msgh);
  lua_insert(L, 1);
  int armed = mf_arm(L, limit_ms);
  int status = lua_pcall(L, 0, LUA_MULTRET, 1);
  int stopped = armed && mf_deadline_passed(L);
  mf_disarm(L, armed);
  lua_remove(L, 1);
  if (status == LUA_OK && stopped) {
    lua_settop(L, 0);
    mf_push_timeout_message(L);
    return LUA_ERRRUN;
  }
  return status;
}

static int repl_k(lua_State *L) {
  const Repl *repl = (const Repl *)lua_touserdata(L, 1);
  int status;
  while ((status = loadline(L, repl)) != -1) {
    if (status == -2) {
      fputs("(null)\n", stderr);
      fflush(stderr);
      continue;
    }
    if (status == LUA_OK) status = repl_docall(L, repl->limit_ms);
    if (status == LUA_OK) {
      int n = lua_gettop(L);
      if (n > 0) {
        luaL_checkstack(L, LUA_MINSTACK, "too many results to print");
        lua_getglobal(L, "print");
        lua_insert(L, 1);
        if (lua_pcall(L, n, 0, 0) != LUA_OK) {
          fprintf(stderr, "%s\n", lua_pushfstring(L, "error calling 'print' (%s)", lua_tostring(L, -1)));
          fflush(stderr);
        }
      }
    } else {
      const char *msg = lua_tostring(L, -1);
      fprintf(stderr, "%s\n", msg != NULL ? msg : "(null)");
      fflush(stderr);
    }
  }
  lua_settop(L, 0);
  fputs("\n", stdout);
  fflush(stdout);
  return 0;
}

int mf_repl(lua_State *L, int64_t limit_ms, int echo) {
  Repl repl = { limit_ms, echo };
  MF_NEED_ROOM(L, 2, 0);
  lua_pushcfunction(L, repl_k);
  lua_pushlightuserdata(L, &repl);
  return lua_pcall(L, 1, 0, 0);
}
