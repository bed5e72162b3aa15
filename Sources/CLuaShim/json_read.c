// JSON read straight into Lua values (the fast path of `LuaState.withJSON`).
// Calls only values.c (the JSON-array marker).
#include "internal.h"
#include <string.h>

// In one protected C call, it builds the tables the Swift reader's value would
// become once pushed (integers exact, `null` members absent, an array with no
// element marked as an array), so the two paths give the same Lua value. On any
// mistake in the text, or anything it does not handle itself, it gives up with
// MF_JSON_SLOW, and the Swift reader parses the text instead: its errors name
// the line and column.

typedef struct {
  const unsigned char *p, *end;
  mf_json_parse_float parse_float;
  int slow;  // set when the reader gave up
} reader;

static void skip_space(reader *r) {
  while (r->p < r->end && (*r->p == ' ' || *r->p == '\n' || *r->p == '\r' || *r->p == '\t')) r->p++;
}

static int give_up(reader *r) {
  r->slow = 1;
  return 0;
}

static int literal(reader *r, const char *word, size_t n) {
  if ((size_t)(r->end - r->p) < n || memcmp(r->p, word, n) != 0) return give_up(r);
  r->p += n;
  return 1;
}

static int is_digit(reader *r) { return r->p < r->end && *r->p >= '0' && *r->p <= '9'; }

/// A number as the Swift reader takes it: an integer when it has no fraction or
/// exponent and fits in 64 bits, else a float parsed by Swift (finite only).
static int read_number(lua_State *L, reader *r) {
  const unsigned char *start = r->p;
  int negative = *r->p == '-';
  if (negative) r->p++;
  if (!is_digit(r)) return give_up(r);
  const unsigned char *digits = r->p;
  if (*r->p == '0') {
    r->p++;
    if (is_digit(r)) return give_up(r);  // a leading zero
  } else {
    while (is_digit(r)) r->p++;
  }
  const unsigned char *digits_end = r->p;
  int is_float = 0;
  if (r->p < r->end && *r->p == '.') {
    is_float = 1;
    r->p++;
    if (!is_digit(r)) return give_up(r);
    while (is_digit(r)) r->p++;
  }
  if (r->p < r->end && (*r->p == 'e' || *r->p == 'E')) {
    is_float = 1;
    r->p++;
    if (r->p < r->end && (*r->p == '+' || *r->p == '-')) r->p++;
    if (!is_digit(r)) return give_up(r);
    while (is_digit(r)) r->p++;
  }
  if (!is_float) {
    // Accumulated negatively: the most negative integer has no positive counterpart.
    lua_Integer v = 0;
    int fits = 1;
    for (const unsigned char *d = digits; d < digits_end && fits; d++) {
      lua_Integer digit = *d - '0';
      if (v < (LUA_MININTEGER + digit) / 10) fits = 0;
      else v = v * 10 - digit;
    }
    if (fits && (negative || v != LUA_MININTEGER)) {
      lua_pushinteger(L, negative ? v : -v);
      return 1;
    }
  }
  double d;
  if (!r->parse_float((const char *)start, (size_t)(r->p - start), &d)) return give_up(r);
  lua_pushnumber(L, d);
  return 1;
}

static int hex4(reader *r, unsigned *out) {
  if (r->end - r->p < 4) return 0;
  unsigned v = 0;
  for (int k = 0; k < 4; k++) {
    unsigned char c = r->p[k];
    unsigned digit;
    if (c >= '0' && c <= '9') digit = c - '0';
    else if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') digit = c - 'A' + 10;
    else return 0;
    v = v << 4 | digit;
  }
  r->p += 4;
  *out = v;
  return 1;
}

static void add_utf8(luaL_Buffer *b, unsigned c) {
  char s[4];
  size_t n;
  if (c < 0x80) { s[0] = (char)c; n = 1; }
  else if (c < 0x800) { s[0] = (char)(0xC0 | c >> 6); s[1] = (char)(0x80 | (c & 0x3F)); n = 2; }
  else if (c < 0x10000) {
    s[0] = (char)(0xE0 | c >> 12); s[1] = (char)(0x80 | (c >> 6 & 0x3F)); s[2] = (char)(0x80 | (c & 0x3F)); n = 3;
  } else {
    s[0] = (char)(0xF0 | c >> 18); s[1] = (char)(0x80 | (c >> 12 & 0x3F));
    s[2] = (char)(0x80 | (c >> 6 & 0x3F)); s[3] = (char)(0x80 | (c & 0x3F)); n = 4;
  }
  luaL_addlstring(b, s, n);
}

/// The string whose opening quote is at r->p, its bytes as they are (the Swift reader
/// does not check UTF-8 either), escapes decoded.
static int read_string(lua_State *L, reader *r) {
  const unsigned char *start = ++r->p;
  while (r->p < r->end && *r->p != '"' && *r->p != '\\' && *r->p >= 0x20) r->p++;
  if (r->p < r->end && *r->p == '"') {
    lua_pushlstring(L, (const char *)start, (size_t)(r->p - start));
    r->p++;
    return 1;
  }
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  luaL_addlstring(&b, (const char *)start, (size_t)(r->p - start));
  for (;;) {
    if (r->p >= r->end || *r->p < 0x20) return give_up(r);
    unsigned char c = *r->p;
    if (c == '"') break;
    if (c != '\\') {
      const unsigned char *run = r->p;
      while (r->p < r->end && *r->p != '"' && *r->p != '\\' && *r->p >= 0x20) r->p++;
      luaL_addlstring(&b, (const char *)run, (size_t)(r->p - run));
      continue;
    }
    if (++r->p >= r->end) return give_up(r);
    c = *r->p++;
    switch (c) {
      case '"': case '\\': case '/': luaL_addchar(&b, (char)c); break;
      case 'b': luaL_addchar(&b, '\b'); break;
      case 'f': luaL_addchar(&b, '\f'); break;
      case 'n': luaL_addchar(&b, '\n'); break;
      case 'r': luaL_addchar(&b, '\r'); break;
      case 't': luaL_addchar(&b, '\t'); break;
      case 'u': {
        unsigned scalar, low;
        if (!hex4(r, &scalar)) return give_up(r);
        if (scalar >= 0xDC00 && scalar <= 0xDFFF) return give_up(r);  // a low surrogate alone
        if (scalar >= 0xD800 && scalar <= 0xDBFF) {
          if (r->end - r->p < 2 || r->p[0] != '\\' || r->p[1] != 'u') return give_up(r);
          r->p += 2;
          if (!hex4(r, &low) || low < 0xDC00 || low > 0xDFFF) return give_up(r);
          scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00);
        }
        add_utf8(&b, scalar);
        break;
      }
      default: return give_up(r);
    }
  }
  r->p++;
  luaL_pushresult(&b);
  return 1;
}

static int read_value(lua_State *L, reader *r, int depth);

static int read_object(lua_State *L, reader *r, int depth) {
  r->p++;
  lua_newtable(L);
  skip_space(r);
  if (r->p < r->end && *r->p == '}') { r->p++; return 1; }
  for (;;) {
    skip_space(r);
    if (r->p >= r->end || *r->p != '"' || !read_string(L, r)) return give_up(r);
    skip_space(r);
    if (r->p >= r->end || *r->p != ':') return give_up(r);
    r->p++;
    if (!read_value(L, r, depth)) return 0;
    lua_rawset(L, -3);  // a null member removes the key, as a later duplicate replaces it
    skip_space(r);
    if (r->p >= r->end) return give_up(r);
    if (*r->p == ',') { r->p++; continue; }
    if (*r->p == '}') { r->p++; return 1; }
    return give_up(r);
  }
}

static int read_array(lua_State *L, reader *r, int depth) {
  r->p++;
  lua_newtable(L);
  skip_space(r);
  lua_Integer index = 0, elements = 0;
  if (r->p < r->end && *r->p == ']') r->p++;
  else for (;;) {
    if (!read_value(L, r, depth)) return 0;
    index++;
    if (lua_isnil(L, -1)) lua_pop(L, 1);  // a hole
    else { lua_rawseti(L, -2, index); elements++; }
    skip_space(r);
    if (r->p >= r->end) return give_up(r);
    if (*r->p == ',') { r->p++; continue; }
    if (*r->p == ']') { r->p++; break; }
    return give_up(r);
  }
  // An array with no element stays an array when written back (`[]`, not `{}`).
  if (elements == 0) { mf_push_array_mt(L); lua_setmetatable(L, -2); }
  return 1;
}

/// Pushes the value at r->p (nil for `null`). Returns 0 when it gave up.
static int read_value(lua_State *L, reader *r, int depth) {
  skip_space(r);
  if (r->p >= r->end) return give_up(r);
  switch (*r->p) {
    case '{':
    case '[':
      if (depth >= MF_JSON_MAX_DEPTH) return give_up(r);
      luaL_checkstack(L, 4, "JSON nested too deep");
      return *r->p == '{' ? read_object(L, r, depth + 1) : read_array(L, r, depth + 1);
    case '"': return read_string(L, r);
    case 't': if (!literal(r, "true", 4)) return 0; lua_pushboolean(L, 1); return 1;
    case 'f': if (!literal(r, "false", 5)) return 0; lua_pushboolean(L, 0); return 1;
    case 'n': if (!literal(r, "null", 4)) return 0; lua_pushnil(L); return 1;
    default:
      if (*r->p == '-' || (*r->p >= '0' && *r->p <= '9')) return read_number(L, r);
      return give_up(r);
  }
}

static int decode_k(lua_State *L) {
  reader *r = lua_touserdata(L, 1);
  lua_settop(L, 0);
  if (r->end - r->p >= 3 && r->p[0] == 0xEF && r->p[1] == 0xBB && r->p[2] == 0xBF) r->p += 3;
  if (!read_value(L, r, 0)) return 0;
  skip_space(r);
  if (r->p != r->end) give_up(r);
  return r->slow ? 0 : 1;
}

int mf_json_decode(lua_State *L, const char *bytes, size_t len, mf_json_parse_float parse_float) {
  static const char empty = 0;
  if (bytes == NULL) bytes = &empty;
  reader r = { (const unsigned char *)bytes, (const unsigned char *)bytes + len, parse_float, 0 };
  MF_NEED_ROOM(L, 2, 0);
  lua_pushcfunction(L, decode_k);
  lua_pushlightuserdata(L, &r);
  int status = lua_pcall(L, 1, 1, 0);
  if (status != LUA_OK) return status;
  if (r.slow) { lua_pop(L, 1); return MF_JSON_SLOW; }
  return LUA_OK;
}
