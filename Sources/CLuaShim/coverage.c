// Line coverage for `moonflow test --coverage`: a line hook that counts, per chunk name
// (a plugin's `@file`), how often each line ran; and, for guided exploration, how many
// lines ran for the first time since it started noting them (mf_cover_fresh_start).
// Nothing is set, and nothing runs, while a state does not cover. Which hook a state has
// between the watchdog's stops is chosen in debughook.c (mf_rest_hook): this one, or the
// debugger's, which counts lines through mf_cover_line when both run. Calls no other file.
#include "internal.h"
#include <stdlib.h>
#include <string.h>

typedef struct mf_cover_file {
  char *name;         // the chunk name without its '@'
  size_t len;
  const char *key;    // the source string last seen for it (a chunk's protos share one)
  uint32_t *hits;     // by line; hits[0] unused
  int cap;
  uint8_t *seen;      // by line, the explorer's: run since mf_cover_fresh_start (cap long)
  struct mf_cover_file *next;
} mf_cover_file;

typedef struct mf_cover {
  mf_cover_file *files, *last;
  int count;
  int fresh_on;       // the explorer counts lines no run reached before (mf_cover_fresh_start)
  int fresh;          // how many since mf_cover_fresh_take
} mf_cover;

static mf_cover_file *find(mf_cover *c, const char *source, size_t srclen) {
  mf_cover_file *f = c->last;
  if (f && f->key == source && f->len + 1 == srclen) return f;
  for (f = c->files; f; f = f->next) {
    if (f->len + 1 == srclen && memcmp(f->name, source + 1, f->len) == 0) {
      f->key = source;
      return c->last = f;
    }
  }
  f = calloc(1, sizeof *f);
  if (!f) return NULL;
  f->name = malloc(srclen);
  if (!f->name) { free(f); return NULL; }
  memcpy(f->name, source + 1, srclen - 1);
  f->name[srclen - 1] = 0;
  f->len = srclen - 1;
  f->key = source;
  f->next = c->files;
  c->files = f;
  c->count++;
  return c->last = f;
}

void mf_cover_hook(lua_State *L, lua_Debug *ar) {
  if (ar->event == LUA_HOOKLINE) mf_cover_line(L, ar);
}

void mf_cover_line(lua_State *L, lua_Debug *ar) {
  mf_cover *c = mf_budget_of(L)->cover;
  if (!c || ar->currentline <= 0) return;
  if (!lua_getinfo(L, "S", ar) || ar->source[0] != '@') return;  // a file's chunk only
  mf_cover_file *f = find(c, ar->source, ar->srclen);
  if (!f) return;
  int line = ar->currentline;
  if (line >= f->cap) {
    int cap = f->cap ? f->cap : 64;
    while (cap <= line) cap *= 2;
    uint32_t *grown = realloc(f->hits, (size_t)cap * sizeof *grown);
    if (!grown) return;
    memset(grown + f->cap, 0, (size_t)(cap - f->cap) * sizeof *grown);
    uint8_t *seen = realloc(f->seen, (size_t)cap);
    if (!seen) { f->hits = grown; return; }
    memset(seen + f->cap, 0, (size_t)(cap - f->cap));
    f->hits = grown;
    f->seen = seen;
    f->cap = cap;
  }
  f->hits[line]++;
  if (c->fresh_on && !f->seen[line]) {
    f->seen[line] = 1;
    c->fresh++;
  }
}

int mf_cover_fresh_start(lua_State *L) {
  if (!mf_cover_start(L)) return 0;
  mf_cover *c = mf_budget_of(L)->cover;
  for (mf_cover_file *f = c->files; f; f = f->next) {
    if (f->seen) memset(f->seen, 0, (size_t)f->cap);
  }
  c->fresh_on = 1;
  c->fresh = 0;
  return 1;
}

int mf_cover_fresh_take(lua_State *L) {
  mf_cover *c = mf_budget_of(L)->cover;
  if (!c) return 0;
  int n = c->fresh;
  c->fresh = 0;
  return n;
}

int mf_cover_start(lua_State *L) {
  mf_budget *b = mf_budget_of(L);
  if (!b->cover) {
    b->cover = calloc(1, sizeof(mf_cover));
    if (!b->cover) return 0;
  }
  return 1;  // the host then sets the hook (mf_rest_hook)
}

int mf_cover_count(lua_State *L) {
  mf_cover *c = mf_budget_of(L)->cover;
  return c ? c->count : 0;
}

const char *mf_cover_file_at(lua_State *L, int i, const uint32_t **hits, int *lines) {
  mf_cover *c = mf_budget_of(L)->cover;
  mf_cover_file *f = c ? c->files : NULL;
  for (; f && i > 0; i--) f = f->next;
  if (!f) return NULL;
  *hits = f->hits;
  *lines = f->cap;
  return f->name;
}

void mf_cover_free(mf_budget *b) {
  mf_cover *c = b->cover;
  if (!c) return;
  b->cover = NULL;
  for (mf_cover_file *f = c->files, *next; f; f = next) {
    next = f->next;
    free(f->name);
    free(f->hits);
    free(f->seen);
    free(f);
  }
  free(c);
}
