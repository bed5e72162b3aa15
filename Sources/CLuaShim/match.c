// The deadline-checking pattern matcher: string.find, match, gmatch and gsub.
// Calls only watchdog.c (to poll the deadline and raise the time-limit error);
// profiles.c installs it.
#include "internal.h"
#include <ctype.h>
#include <string.h>

// Lua 5.4's pattern language and results, in a matcher written for Moonflow so
// that a long match stops at the time limit: the matcher counts its steps and
// every few thousand asks whether the running call passed its deadline. Lua's
// own matcher backtracks without any check, so `("a"):rep(1e6):find(".-.-.-b")`
// would run for hours whatever the limit. Installed by mf_install_watchdog, so
// only in states that have a time limit. Tested beside lua5.4 on many patterns
// (Tests/LuaKitTests/PatternMatchTests.swift).

enum {
  MAX_CAPTURES = 32,          // LUA_MAXCAPTURES
  MAX_DEPTH = 200,            // nested backtracking calls before "pattern too complex"
  CHECK_EVERY = 4096,         // steps between two looks at the deadline
  CAP_OPEN = -1,              // a capture still open
  CAP_POS = -2,               // a position capture `()`
};

typedef struct pattern_run {
  lua_State *L;
  const char *subject, *subject_end;
  const char *pat_end;
  int depth_left;
  unsigned steps;
  int ncap;
  struct { const char *at; ptrdiff_t len; } cap[MAX_CAPTURES];
} pattern_run;

static void tick(pattern_run *r) {
  if (++r->steps % CHECK_EVERY == 0 && mf_deadline_passed(r->L)) mf_raise_timeout(r->L);
}

static void prepare(pattern_run *r, lua_State *L, const char *s, size_t ls, const char *p, size_t lp) {
  r->L = L;
  r->subject = s;
  r->subject_end = s + ls;
  r->pat_end = p + lp;
  r->depth_left = MAX_DEPTH;
  r->steps = 0;
  r->ncap = 0;
}

// MARK: - Character classes

static int in_named_class(int c, int letter) {
  int yes;
  switch (tolower(letter)) {
    case 'a': yes = isalpha(c); break;
    case 'c': yes = iscntrl(c); break;
    case 'd': yes = isdigit(c); break;
    case 'g': yes = isgraph(c); break;
    case 'l': yes = islower(c); break;
    case 'p': yes = ispunct(c); break;
    case 's': yes = isspace(c); break;
    case 'u': yes = isupper(c); break;
    case 'w': yes = isalnum(c); break;
    case 'x': yes = isxdigit(c); break;
    case 'z': yes = c == 0; break;
    default: return letter == c;  // `%.` and friends: the character itself
  }
  if (islower(letter)) return yes != 0;
  return yes == 0;
}

/// Where the single-character class starting at p ends (just past it).
static const char *class_end(pattern_run *r, const char *p) {
  char first = *p++;
  if (first == '%') {
    if (p == r->pat_end) luaL_error(r->L, "malformed pattern (ends with '%%')");
    return p + 1;
  }
  if (first != '[') return p;
  if (*p == '^') p++;
  // The first character after `[` or `[^` belongs to the set, even `]`.
  do {
    if (p == r->pat_end) luaL_error(r->L, "malformed pattern (missing ']')");
    char c = *p++;
    if (c == '%' && p < r->pat_end) p++;
  } while (*p != ']');
  return p + 1;
}

/// Whether c is in the set `[...]` that spans open..close (close at its `]`).
static int in_set(int c, const char *open, const char *close) {
  int found = 1;
  const char *p = open + 1;
  if (*p == '^') { found = 0; p++; }
  for (; p < close; p++) {
    if (*p == '%') {
      p++;
      if (in_named_class(c, (unsigned char)*p)) return found;
    } else if (p[1] == '-' && p + 2 < close) {
      if ((unsigned char)p[0] <= c && c <= (unsigned char)p[2]) return found;
      p += 2;
    } else if ((unsigned char)*p == c) {
      return found;
    }
  }
  return !found;
}

/// Whether the subject character at s matches the class p..ep.
static int one_char(pattern_run *r, const char *s, const char *p, const char *ep) {
  if (s >= r->subject_end) return 0;
  int c = (unsigned char)*s;
  switch (*p) {
    case '.': return 1;
    case '%': return in_named_class(c, (unsigned char)p[1]);
    case '[': return in_set(c, p, ep - 1);
    default: return (unsigned char)*p == c;
  }
}

// MARK: - Matching

static const char *match_here(pattern_run *r, const char *s, const char *p);

static const char *match_balanced(pattern_run *r, const char *s, const char *p) {
  if (p >= r->pat_end - 1) luaL_error(r->L, "malformed pattern (missing arguments to '%%b')");
  if (s >= r->subject_end || *s != *p) return NULL;
  char open = p[0], close = p[1];
  int depth = 1;
  for (s++; s < r->subject_end; s++) {
    tick(r);
    if (*s == close) {
      if (--depth == 0) return s + 1;
    } else if (*s == open) {
      depth++;
    }
  }
  return NULL;
}

static const char *match_backref(pattern_run *r, const char *s, int digit) {
  int i = digit - '1';
  if (i < 0 || i >= r->ncap || r->cap[i].len == CAP_OPEN)
    luaL_error(r->L, "invalid capture index %%%d", i + 1);
  size_t len = (size_t)r->cap[i].len;
  if ((size_t)(r->subject_end - s) < len || memcmp(r->cap[i].at, s, len) != 0) return NULL;
  return s + len;
}

static const char *open_capture(pattern_run *r, const char *s, const char *p, ptrdiff_t kind) {
  if (r->ncap >= MAX_CAPTURES) luaL_error(r->L, "too many captures");
  int i = r->ncap++;
  r->cap[i].at = s;
  r->cap[i].len = kind;
  const char *end = match_here(r, s, p);
  if (end == NULL) r->ncap--;
  return end;
}

static const char *close_capture(pattern_run *r, const char *s, const char *p) {
  int i = r->ncap - 1;
  while (i >= 0 && r->cap[i].len != CAP_OPEN) i--;
  if (i < 0) luaL_error(r->L, "invalid pattern capture");
  r->cap[i].len = s - r->cap[i].at;
  const char *end = match_here(r, s, p);
  if (end == NULL) r->cap[i].len = CAP_OPEN;
  return end;
}

/// `x*` (and `x+` after its first): as many as possible, then give back.
static const char *longest(pattern_run *r, const char *s, const char *p, const char *ep) {
  ptrdiff_t n = 0;
  while (one_char(r, s + n, p, ep)) { n++; tick(r); }
  for (; n >= 0; n--) {
    const char *end = match_here(r, s + n, ep + 1);
    if (end) return end;
  }
  return NULL;
}

/// `x-`: as few as possible, one more at a time.
static const char *shortest(pattern_run *r, const char *s, const char *p, const char *ep) {
  for (;;) {
    const char *end = match_here(r, s, ep + 1);
    if (end) return end;
    if (!one_char(r, s, p, ep)) return NULL;
    s++;
  }
}

/// The end of a match of pattern p..pat_end at s, or NULL. Tail steps loop
/// here; branches that may backtrack recurse (bounded by MAX_DEPTH).
static const char *match_here(pattern_run *r, const char *s, const char *p) {
  if (r->depth_left-- == 0) luaL_error(r->L, "pattern too complex");
  for (;;) {
    tick(r);
    if (p == r->pat_end) break;
    if (*p == '(') {
      s = p[1] == ')' ? open_capture(r, s, p + 2, CAP_POS) : open_capture(r, s, p + 1, CAP_OPEN);
      break;
    }
    if (*p == ')') { s = close_capture(r, s, p + 1); break; }
    if (*p == '$' && p + 1 == r->pat_end) { if (s != r->subject_end) s = NULL; break; }
    if (*p == '%' && p[1] == 'b') {
      s = match_balanced(r, s, p + 2);
      if (s == NULL) break;
      p += 4;
      continue;
    }
    if (*p == '%' && p[1] == 'f') {
      p += 2;
      if (*p != '[') luaL_error(r->L, "missing '[' after '%%f' in pattern");
      const char *ep = class_end(r, p);
      int before = s == r->subject ? 0 : (unsigned char)s[-1];
      int here = (unsigned char)*s;  // the terminating '\0' at the end of the subject
      if (in_set(before, p, ep - 1) || !in_set(here, p, ep - 1)) { s = NULL; break; }
      p = ep;
      continue;
    }
    if (*p == '%' && isdigit((unsigned char)p[1])) {
      s = match_backref(r, s, (unsigned char)p[1]);
      if (s == NULL) break;
      p += 2;
      continue;
    }
    // A single-character class with an optional `*`, `+`, `-` or `?`.
    const char *ep = class_end(r, p);
    char suffix = *ep;
    if (!one_char(r, s, p, ep)) {
      if (suffix == '*' || suffix == '?' || suffix == '-') { p = ep + 1; continue; }
      s = NULL;
      break;
    }
    if (suffix == '?') {
      const char *end = match_here(r, s + 1, ep + 1);
      if (end) { s = end; break; }
      p = ep + 1;
      continue;
    }
    if (suffix == '+') { s = longest(r, s + 1, p, ep); break; }
    if (suffix == '*') { s = longest(r, s, p, ep); break; }
    if (suffix == '-') { s = shortest(r, s, p, ep); break; }
    s++;
    p = ep;
  }
  r->depth_left++;
  return s;
}

// MARK: - Captures to Lua values

/// Capture i as the text it holds, or pushes its position and returns CAP_POS.
/// With no captures, capture 0 is the whole match s..e.
static ptrdiff_t capture_text(pattern_run *r, int i, const char *s, const char *e, const char **text) {
  if (i >= r->ncap) {
    if (i != 0) luaL_error(r->L, "invalid capture index %%%d", i + 1);
    *text = s;
    return e - s;
  }
  ptrdiff_t len = r->cap[i].len;
  *text = r->cap[i].at;
  if (len == CAP_OPEN) luaL_error(r->L, "unfinished capture");
  if (len == CAP_POS) lua_pushinteger(r->L, (r->cap[i].at - r->subject) + 1);
  return len;
}

static void push_capture(pattern_run *r, int i, const char *s, const char *e) {
  const char *text;
  ptrdiff_t len = capture_text(r, i, s, e, &text);
  if (len != CAP_POS) lua_pushlstring(r->L, text, (size_t)len);
}

/// Pushes every capture (the whole match s..e when there are none and s is
/// given); returns how many.
static int push_captures(pattern_run *r, const char *s, const char *e) {
  int n = (r->ncap == 0 && s) ? 1 : r->ncap;
  luaL_checkstack(r->L, n, "too many captures");
  for (int i = 0; i < n; i++) push_capture(r, i, s, e);
  return n;
}

// MARK: - The library functions

/// A 1-based, possibly negative, position made a 0-based offset clamped at 0..len+1.
static size_t start_offset(lua_Integer pos, size_t len) {
  if (pos > 0) return (size_t)pos - 1;
  if (pos == 0) return 0;
  if (pos < -(lua_Integer)len) return 0;
  return len + (size_t)pos;
}

static int has_specials(const char *p, size_t lp) {
  for (size_t i = 0; i < lp; i++) {
    if (p[i] != '\0' && strchr("^$*+?.([%-", p[i])) return 1;
  }
  return 0;
}

static const char *find_plain(const char *s, size_t ls, const char *p, size_t lp) {
  if (lp == 0) return s;
  if (lp > ls) return NULL;
  const char *last = s + (ls - lp);
  for (const char *at = s; at <= last; at++) {
    at = memchr(at, *p, (size_t)(last - at) + 1);
    if (at == NULL) return NULL;
    if (memcmp(at + 1, p + 1, lp - 1) == 0) return at;
  }
  return NULL;
}

static int find_or_match(lua_State *L, int find) {
  size_t ls, lp;
  const char *s = luaL_checklstring(L, 1, &ls);
  const char *p = luaL_checklstring(L, 2, &lp);
  size_t from = start_offset(luaL_optinteger(L, 3, 1), ls);
  if (from > ls) { luaL_pushfail(L); return 1; }
  if (find && (lua_toboolean(L, 4) || !has_specials(p, lp))) {
    const char *at = find_plain(s + from, ls - from, p, lp);
    if (at == NULL) { luaL_pushfail(L); return 1; }
    lua_pushinteger(L, (at - s) + 1);
    lua_pushinteger(L, (lua_Integer)((at - s) + (ptrdiff_t)lp));
    return 2;
  }
  int anchored = *p == '^';
  if (anchored) { p++; lp--; }
  pattern_run r;
  prepare(&r, L, s, ls, p, lp);
  const char *at = s + from;
  do {
    r.ncap = 0;
    const char *end = match_here(&r, at, p);
    if (end != NULL) {
      if (!find) return push_captures(&r, at, end);
      lua_pushinteger(L, (at - s) + 1);
      lua_pushinteger(L, end - s);
      return push_captures(&r, NULL, NULL) + 2;
    }
  } while (at++ < r.subject_end && !anchored);
  luaL_pushfail(L);
  return 1;
}

static int str_find(lua_State *L) { return find_or_match(L, 1); }
static int str_match(lua_State *L) { return find_or_match(L, 0); }

typedef struct gmatch_state {
  const char *at, *pattern, *last_end;
  pattern_run run;
} gmatch_state;

static int gmatch_next(lua_State *L) {
  gmatch_state *g = (gmatch_state *)lua_touserdata(L, lua_upvalueindex(3));
  g->run.L = L;
  g->run.steps = 0;
  for (const char *at = g->at; at <= g->run.subject_end; at++) {
    g->run.ncap = 0;
    const char *end = match_here(&g->run, at, g->pattern);
    if (end != NULL && end != g->last_end) {
      g->at = g->last_end = end;
      return push_captures(&g->run, at, end);
    }
  }
  return 0;
}

static int str_gmatch(lua_State *L) {
  size_t ls, lp;
  const char *s = luaL_checklstring(L, 1, &ls);
  const char *p = luaL_checklstring(L, 2, &lp);
  size_t from = start_offset(luaL_optinteger(L, 3, 1), ls);
  lua_settop(L, 2);  // the closure keeps both strings alive
  gmatch_state *g = (gmatch_state *)lua_newuserdatauv(L, sizeof(gmatch_state), 0);
  if (from > ls) from = ls + 1;
  prepare(&g->run, L, s, ls, p, lp);
  g->at = s + from;
  g->pattern = p;
  g->last_end = NULL;
  lua_pushcclosure(L, gmatch_next, 3);
  return 1;
}

/// Appends the replacement string (argument 3) with `%0`-`%9` and `%%` expanded.
static void add_template(pattern_run *r, luaL_Buffer *b, const char *s, const char *e) {
  lua_State *L = r->L;
  size_t len;
  const char *t = lua_tolstring(L, 3, &len);
  const char *stop = t + len;
  while (t < stop) {
    const char *esc = memchr(t, '%', (size_t)(stop - t));
    if (esc == NULL) break;
    luaL_addlstring(b, t, (size_t)(esc - t));
    char c = esc[1];  // the string's terminating '\0' when `%` is last
    if (c == '%') {
      luaL_addchar(b, '%');
    } else if (c == '0') {
      luaL_addlstring(b, s, (size_t)(e - s));
    } else if (isdigit((unsigned char)c)) {
      const char *text;
      ptrdiff_t n = capture_text(r, c - '1', s, e, &text);
      if (n == CAP_POS) luaL_addvalue(b);
      else luaL_addlstring(b, text, (size_t)n);
    } else {
      luaL_error(L, "invalid use of '%c' in replacement string", '%');
    }
    t = esc + 2;
  }
  if (t < stop) luaL_addlstring(b, t, (size_t)(stop - t));
}

/// Appends the replacement for the match s..e; returns whether the text changed.
static int add_replacement(pattern_run *r, luaL_Buffer *b, const char *s, const char *e, int kind) {
  lua_State *L = r->L;
  if (kind == LUA_TFUNCTION) {
    lua_pushvalue(L, 3);
    int n = push_captures(r, s, e);
    lua_call(L, n, 1);
  } else if (kind == LUA_TTABLE) {
    push_capture(r, 0, s, e);
    lua_gettable(L, 3);
  } else {
    add_template(r, b, s, e);
    return 1;
  }
  if (!lua_toboolean(L, -1)) {
    lua_pop(L, 1);
    luaL_addlstring(b, s, (size_t)(e - s));
    return 0;
  }
  if (!lua_isstring(L, -1)) return luaL_error(L, "invalid replacement value (a %s)", luaL_typename(L, -1));
  luaL_addvalue(b);
  return 1;
}

static int str_gsub(lua_State *L) {
  size_t ls, lp;
  const char *s = luaL_checklstring(L, 1, &ls);
  const char *p = luaL_checklstring(L, 2, &lp);
  int kind = lua_type(L, 3);
  lua_Integer max = luaL_optinteger(L, 4, (lua_Integer)ls + 1);
  luaL_argexpected(L, kind == LUA_TNUMBER || kind == LUA_TSTRING || kind == LUA_TFUNCTION || kind == LUA_TTABLE,
                   3, "string/function/table");
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  int anchored = *p == '^';
  if (anchored) { p++; lp--; }
  pattern_run r;
  prepare(&r, L, s, ls, p, lp);
  const char *at = s, *last_end = NULL;
  lua_Integer count = 0;
  int changed = 0;
  while (count < max) {
    r.ncap = 0;
    const char *end = match_here(&r, at, p);
    if (end != NULL && end != last_end) {
      count++;
      changed |= add_replacement(&r, &b, at, end, kind);
      at = last_end = end;
    } else if (at < r.subject_end) {
      luaL_addchar(&b, *at++);
    } else {
      break;
    }
    if (anchored) break;
  }
  if (changed) {
    luaL_addlstring(&b, at, (size_t)(r.subject_end - at));
    luaL_pushresult(&b);
  } else {
    lua_pushvalue(L, 1);
  }
  lua_pushinteger(L, count);
  return 2;
}

void mf_install_matcher(lua_State *L, int idx) {
  static const luaL_Reg functions[] = {
    { "find", str_find }, { "match", str_match }, { "gmatch", str_gmatch }, { "gsub", str_gsub }, { NULL, NULL },
  };
  for (const luaL_Reg *f = functions; f->name; f++) {
    lua_pushcfunction(L, f->func);
    lua_setfield(L, idx, f->name);
  }
}
