// JSON written straight from a Lua table (the fast path of `LuaState.jsonBytes(of:)`).
// Calls values.c (the array and object markers) and views.c (the table a view shows).
#include "internal.h"
#include <stdlib.h>
#include <string.h>

// One C walk, raw reads only, nothing allocated in Lua, so it never raises and
// no string moves while it runs. The text is the one a copy into Swift gives
// when written as JSON (sorted keys, `[]` for a marked empty table, numbers
// formatted by Swift through `float_text`). Anything unusual (NaN, a function,
// a cycle, a foreign metatable, a boolean key, invalid UTF-8, deep nesting, no
// memory) makes it give up with MF_JSON_SLOW, and the value is copied and
// written that way instead, with errors naming the path.

typedef struct {
  int type;            // LUA_TNUMBER (integer or float) or LUA_TSTRING
  int is_integer;
  lua_Integer i;
  lua_Number d;
  const char *s;
  size_t len;
  size_t start, end;   // the entry's text in the output
} entry;

typedef struct {
  lua_State *L;
  mf_json_out *out;
  mf_json_float_text float_text;
  const void *open[MF_JSON_MAX_DEPTH];
  entry *entries;
  size_t entry_count, entry_cap;
  char *scratch;
  size_t scratch_cap;
} walk;

enum { OK = 0, SLOW = MF_JSON_SLOW };

static int reserve(mf_json_out *o, size_t more) {
  if (o->len + more <= o->cap) return OK;
  size_t cap = o->cap ? o->cap : 256;
  while (cap < o->len + more) cap *= 2;
  char *d = realloc(o->data, cap);
  if (d == NULL) return SLOW;
  o->data = d;
  o->cap = cap;
  return OK;
}

static int put(mf_json_out *o, const char *s, size_t n) {
  if (reserve(o, n) != OK) return SLOW;
  memcpy(o->data + o->len, s, n);
  o->len += n;
  return OK;
}

static int put_integer(mf_json_out *o, lua_Integer n) {
  char digits[24];
  int at = (int)sizeof digits;
  lua_Unsigned m = n < 0 ? (lua_Unsigned)0 - (lua_Unsigned)n : (lua_Unsigned)n;
  do { digits[--at] = (char)('0' + m % 10); m /= 10; } while (m > 0);
  if (n < 0) digits[--at] = '-';
  return put(o, digits + at, sizeof digits - (size_t)at);
}

static int put_float(walk *w, lua_Number d) {
  if (d != d || d - d != 0) return SLOW;  // NaN or an infinity
  char text[40];
  int n = w->float_text(d, text, (int)sizeof text);
  if (n <= 0) return SLOW;
  return put(w->out, text, (size_t)n);
}

/// Length of the valid UTF-8 sequence at s (at most len bytes), 0 if invalid:
/// no overlong forms, no surrogates, nothing above U+10FFFF.
static size_t utf8_sequence(const unsigned char *s, size_t len) {
  unsigned char c = s[0];
  if (c >= 0xC2 && c <= 0xDF) return len >= 2 && (s[1] & 0xC0) == 0x80 ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (len < 3 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80) return 0;
    if (c == 0xE0 && s[1] < 0xA0) return 0;
    if (c == 0xED && s[1] > 0x9F) return 0;
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (len < 4 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80 || (s[3] & 0xC0) != 0x80) return 0;
    if (c == 0xF0 && s[1] < 0x90) return 0;
    if (c == 0xF4 && s[1] > 0x8F) return 0;
    return 4;
  }
  return 0;
}

static int put_string(mf_json_out *o, const char *str, size_t len) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char *s = (const unsigned char *)str;
  if (reserve(o, len + 2) != OK) return SLOW;
  o->data[o->len++] = '"';
  size_t run = 0;
  for (size_t j = 0; j < len;) {
    unsigned char b = s[j];
    if (b >= 0x80) {
      size_t n = utf8_sequence(s + j, len - j);
      if (n == 0) return SLOW;  // repaired by the copy's writer
      j += n;
      continue;
    }
    if (b >= 0x20 && b != '"' && b != '\\') { j++; continue; }
    if (put(o, str + run, j - run) != OK) return SLOW;
    char esc[6] = { '\\', 0, 0, 0, 0, 0 };
    size_t n = 2;
    switch (b) {
      case '"': esc[1] = '"'; break;
      case '\\': esc[1] = '\\'; break;
      case 0x08: esc[1] = 'b'; break;
      case 0x0C: esc[1] = 'f'; break;
      case 0x0A: esc[1] = 'n'; break;
      case 0x0D: esc[1] = 'r'; break;
      case 0x09: esc[1] = 't'; break;
      default:
        esc[1] = 'u'; esc[2] = '0'; esc[3] = '0'; esc[4] = hex[b >> 4]; esc[5] = hex[b & 0xF];
        n = 6;
    }
    if (put(o, esc, n) != OK) return SLOW;
    run = ++j;
  }
  if (put(o, str + run, len - run) != OK) return SLOW;
  return put(o, "\"", 1);
}

/// `LuaValue.keyOrder`: numbers by value (an integer before an equal float), then strings by bytes.
static int precedes(const entry *a, const entry *b) {
  if (a->type != b->type) return a->type == LUA_TNUMBER;
  if (a->type == LUA_TSTRING) {
    size_t common = a->len < b->len ? a->len : b->len;
    int order = common ? memcmp(a->s, b->s, common) : 0;
    return order != 0 ? order < 0 : a->len < b->len;
  }
  if (a->is_integer && b->is_integer) return a->i < b->i;
  if (a->is_integer) return (lua_Number)a->i <= b->d;
  if (b->is_integer) return a->d < (lua_Number)b->i;
  return a->d < b->d;
}

static int compare(const void *x, const void *y) {
  const entry *a = x, *b = y;
  if (precedes(a, b)) return -1;
  if (precedes(b, a)) return 1;
  return 0;
}

static int value(walk *w, int idx, int depth);

static int array(walk *w, int idx, lua_Integer n, int depth) {
  if (put(w->out, "[", 1) != OK) return SLOW;
  for (lua_Integer i = 1; i <= n; i++) {
    if (i > 1 && put(w->out, ",", 1) != OK) return SLOW;
    lua_rawgeti(w->L, idx, i);
    int r = value(w, lua_gettop(w->L), depth + 1);
    lua_pop(w->L, 1);
    if (r != OK) return r;
  }
  return put(w->out, "]", 1);
}

static int object(walk *w, int idx, int depth) {
  lua_State *L = w->L;
  mf_json_out *o = w->out;
  if (put(o, "{", 1) != OK) return SLOW;
  size_t body = o->len, first = w->entry_count;
  int in_order = 1;
  lua_pushnil(L);
  while (lua_next(L, idx) != 0) {
    entry e;
    memset(&e, 0, sizeof e);
    e.type = lua_type(L, -2);
    if (e.type == LUA_TNUMBER) {
      e.is_integer = lua_isinteger(L, -2);
      if (e.is_integer) e.i = lua_tointeger(L, -2); else e.d = lua_tonumber(L, -2);
    } else if (e.type == LUA_TSTRING) {
      e.s = lua_tolstring(L, -2, &e.len);  // a string key: no conversion, no allocation
    } else {
      return SLOW;
    }
    if (w->entry_count > first) {
      if (in_order && !precedes(&w->entries[w->entry_count - 1], &e)) in_order = 0;
      if (put(o, ",", 1) != OK) return SLOW;
    }
    e.start = o->len;
    int r;
    if (e.type == LUA_TSTRING) {
      r = put_string(o, e.s, e.len);
    } else {
      r = put(o, "\"", 1);
      if (r == OK) r = e.is_integer ? put_integer(o, e.i) : put_float(w, e.d);
      if (r == OK) r = put(o, "\"", 1);
    }
    if (r == OK) r = put(o, ":", 1);
    if (r == OK) r = value(w, lua_gettop(L), depth + 1);
    if (r != OK) return r;
    e.end = o->len;
    if (w->entry_count == w->entry_cap) {
      size_t cap = w->entry_cap ? w->entry_cap * 2 : 64;
      entry *grown = realloc(w->entries, cap * sizeof(entry));
      if (grown == NULL) return SLOW;
      w->entries = grown;
      w->entry_cap = cap;
    }
    w->entries[w->entry_count++] = e;
    lua_pop(L, 1);
  }
  size_t count = w->entry_count - first;
  if (count == 0) {
    o->len--;  // the "{"
    return mf_is_json_array(L, idx) ? put(o, "[]", 2) : put(o, "{}", 2);
  }
  if (!in_order) {
    entry *list = w->entries + first;
    qsort(list, count, sizeof(entry), compare);
    size_t size = o->len - body;
    if (size > w->scratch_cap) {
      char *grown = realloc(w->scratch, size);
      if (grown == NULL) return SLOW;
      w->scratch = grown;
      w->scratch_cap = size;
    }
    memcpy(w->scratch, o->data + body, size);
    o->len = body;
    for (size_t k = 0; k < count; k++) {
      if (k > 0) o->data[o->len++] = ',';  // the same bytes as before, reordered: room is there
      memcpy(o->data + o->len, w->scratch + (list[k].start - body), list[k].end - list[k].start);
      o->len += list[k].end - list[k].start;
    }
  }
  w->entry_count = first;
  return put(o, "}", 1);
}

static int table(walk *w, int idx, int depth) {
  lua_State *L = w->L;
  if (depth >= MF_JSON_MAX_DEPTH || !lua_checkstack(L, 4)) return SLOW;
  const void *identity = lua_topointer(L, idx);
  for (int k = 0; k < depth; k++) if (w->open[k] == identity) return SLOW;  // a cycle
  if (mf_metatable_kind(L, idx) >= 3) return SLOW;
  w->open[depth] = identity;
  // The sequence part: 1...n while values are present (as a copy into Swift counts it).
  lua_Integer n = 0, border = (lua_Integer)lua_rawlen(L, idx);
  while (n < border) {
    int present = lua_rawgeti(L, idx, n + 1) != LUA_TNIL;
    lua_pop(L, 1);
    if (!present) break;
    n++;
  }
  if (n > 0) {  // a list when no other key is there
    lua_Integer total = 0;
    lua_pushnil(L);
    while (lua_next(L, idx) != 0) { lua_pop(L, 1); total++; }
    if (total == n) return array(w, idx, n, depth);
  }
  return object(w, idx, depth);
}

static int value(walk *w, int idx, int depth) {
  lua_State *L = w->L;
  switch (lua_type(L, idx)) {
    case LUA_TNIL: case LUA_TNONE: return put(w->out, "null", 4);
    case LUA_TBOOLEAN: return lua_toboolean(L, idx) ? put(w->out, "true", 4) : put(w->out, "false", 5);
    case LUA_TNUMBER:
      if (lua_isinteger(L, idx)) return put_integer(w->out, lua_tointeger(L, idx));
      return put_float(w, lua_tonumber(L, idx));
    case LUA_TSTRING: {
      size_t len;
      const char *s = lua_tolstring(L, idx, &len);
      return put_string(w->out, s, len);
    }
    case LUA_TTABLE: {
      int top = lua_gettop(L);
      int r = mf_readonly_target(L, idx) ? table(w, top + 1, depth) : table(w, idx, depth);
      lua_settop(L, top);
      return r;
    }
    default: return SLOW;
  }
}

int mf_json_encode(lua_State *L, int idx, mf_json_out *out, mf_json_float_text float_text) {
  walk w;
  memset(&w, 0, sizeof w);
  w.L = L;
  w.out = out;
  w.float_text = float_text;
  int top = lua_gettop(L);
  int r = value(&w, lua_absindex(L, idx), 0);
  lua_settop(L, top);
  free(w.entries);
  free(w.scratch);
  return r;
}
