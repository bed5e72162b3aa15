#include "CEditShim.h"

// Types and prototypes only: libedit is not linked (the loader would map it, and
// libtinfo, libbsd and libmd under it, at every start of `moonflow`). mfe_open loads it
// with dlopen and every function and variable below is looked up with dlsym; a direct
// use of one of the header's names would not link.
#include <editline/readline.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <langinfo.h>
#include <locale.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// libedit's readline API as this file uses it: a pointer to each function, and the
// address of each variable (libedit's own copy: nothing else in the process has one).
static struct {
  __typeof__(readline) *readline;
  __typeof__(using_history) *using_history;
  __typeof__(stifle_history) *stifle_history;
  __typeof__(read_history) *read_history;
  __typeof__(write_history) *write_history;
  __typeof__(add_history) *add_history;
  __typeof__(history_get) *history_get;
  __typeof__(rl_completion_matches) *rl_completion_matches;
  __typeof__(rl_forced_update_display) *rl_forced_update_display;
  __typeof__(rl_getc_function) *rl_getc_function;
  __typeof__(history_length) *history_length;
  __typeof__(history_base) *history_base;
  __typeof__(rl_readline_name) *rl_readline_name;
  __typeof__(rl_attempted_completion_function) *rl_attempted_completion_function;
  __typeof__(rl_basic_word_break_characters) *rl_basic_word_break_characters;
  __typeof__(rl_attempted_completion_over) *rl_attempted_completion_over;
  __typeof__(rl_line_buffer) *rl_line_buffer;
  __typeof__(rl_completion_append_character) *rl_completion_append_character;
} ed;

#ifdef __APPLE__
static const char *const library_names[] = {"libedit.3.dylib", "libedit.dylib"};
#else
static const char *const library_names[] = {"libedit.so.2", "libedit.so"};
#endif

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int loaded;
static char load_error[512];

// Looks NAME up in LIBRARY (opened as FILE) into ed.NAME; records the first name missing.
#define RESOLVE(library, file, name)                                                   \
  do {                                                                                 \
    ed.name = (__typeof__(ed.name))dlsym(library, #name);                              \
    if (ed.name == NULL && load_error[0] == '\0')                                      \
      snprintf(load_error, sizeof load_error, "%s has no symbol %s", file, #name);    \
  } while (0)

static void load(void) {
  void *library = NULL;
  const char *opened = NULL;
  for (size_t i = 0; i < sizeof library_names / sizeof library_names[0]; i++) {
    library = dlopen(library_names[i], RTLD_NOW | RTLD_LOCAL);
    if (library != NULL) { opened = library_names[i]; break; }
    // The first name's error: the one that says what is missing.
    const char *error = dlerror();
    if (load_error[0] == '\0') snprintf(load_error, sizeof load_error, "%s", error ? error : library_names[i]);
  }
  if (library == NULL) return;
  load_error[0] = '\0';
  RESOLVE(library, opened, readline);
  RESOLVE(library, opened, using_history);
  RESOLVE(library, opened, stifle_history);
  RESOLVE(library, opened, read_history);
  RESOLVE(library, opened, write_history);
  RESOLVE(library, opened, add_history);
  RESOLVE(library, opened, history_get);
  RESOLVE(library, opened, rl_completion_matches);
  RESOLVE(library, opened, rl_forced_update_display);
  RESOLVE(library, opened, rl_getc_function);
  RESOLVE(library, opened, history_length);
  RESOLVE(library, opened, history_base);
  RESOLVE(library, opened, rl_readline_name);
  RESOLVE(library, opened, rl_attempted_completion_function);
  RESOLVE(library, opened, rl_basic_word_break_characters);
  RESOLVE(library, opened, rl_attempted_completion_over);
  RESOLVE(library, opened, rl_line_buffer);
  RESOLVE(library, opened, rl_completion_append_character);
  if (load_error[0] != '\0') {
    memset(&ed, 0, sizeof ed);
    dlclose(library);
    return;
  }
  loaded = 1;
}

#undef RESOLVE

static char *history_file = NULL;
// Written to wake the reading thread when a line is queued for it to print.
static int wake[2] = {-1, -1};
static int read_key(FILE *stream);
static char *pending = NULL;

// Completion lists: lines[i] is a NUL-separated list of words, first the head.
static char **lines = NULL;
static size_t *line_word_counts = NULL;
static size_t line_count = 0;

// State of one rl_completion_matches run.
static const char *const *candidates = NULL;
static size_t candidate_count = 0;
static const char **scratch = NULL;
static size_t candidate_index = 0;

static void free_completions(void) {
  for (size_t i = 0; i < line_count; i++) free(lines[i]);
  free(lines);
  free(line_word_counts);
  free(scratch);
  lines = NULL;
  line_word_counts = NULL;
  scratch = NULL;
  line_count = 0;
}

// The n-th word (0-based) of line i.
static const char *word_at(size_t i, size_t n) {
  const char *w = lines[i];
  while (n-- > 0) w += strlen(w) + 1;
  return w;
}

static char *generate(const char *text, int state) {
  if (state == 0) candidate_index = 0;
  size_t length = strlen(text);
  while (candidate_index < candidate_count) {
    const char *word = candidates[candidate_index++];
    if (strncmp(word, text, length) == 0) return strdup(word);
  }
  return NULL;
}

static char **complete(const char *text, int start, int end) {
  (void)end;
  *ed.rl_attempted_completion_over = 1;  // never fall back to file names
  if (line_count == 0) return NULL;
  size_t total = 0;
  for (size_t i = 0; i < line_count; i++) total += line_word_counts[i];
  free(scratch);
  scratch = malloc(sizeof(char *) * (total + 1));
  if (scratch == NULL) return NULL;
  candidate_count = 0;
  // The first word typed on the line, if the word being completed is not it.
  const char *line_buffer = *ed.rl_line_buffer ? *ed.rl_line_buffer : "";
  const char *buffer = line_buffer;
  while (*buffer == ' ') buffer++;
  size_t head_length = strcspn(buffer, " ");
  int completing_head = (buffer + head_length >= line_buffer + start);
  for (size_t i = 0; i < line_count; i++) {
    const char *head = word_at(i, 0);
    if (completing_head) {
      if (*head) scratch[candidate_count++] = head;
    } else if (strlen(head) == head_length && strncmp(head, buffer, head_length) == 0) {
      for (size_t n = 1; n < line_word_counts[i]; n++) scratch[candidate_count++] = word_at(i, n);
    }
  }
  candidates = scratch;
  // A field (`by=`) is followed by its value, not a space.
  *ed.rl_completion_append_character = ' ';
  if (!completing_head) *ed.rl_completion_append_character = '\0';
  return ed.rl_completion_matches(text, generate);
}

int mfe_open(const char *name, const char *history_path, int max_history) {
  pthread_once(&load_once, load);
  if (!loaded) return -1;
  if (wake[0] < 0 && pipe(wake) == 0) {
    for (int i = 0; i < 2; i++) fcntl(wake[i], F_SETFD, FD_CLOEXEC);
    fcntl(wake[1], F_SETFL, fcntl(wake[1], F_GETFL) | O_NONBLOCK);
  }
  // libedit keeps the line as wide characters and takes only what the C library's
  // character type calls printable: under the "C" locale (a process that never set
  // one, or LANG unset) it beeps at "ë" and drops "☃" from the line. Text typed at the
  // prompt is UTF-8, as everything Moonflow reads is.
  setlocale(LC_CTYPE, "");
  const char *codeset = nl_langinfo(CODESET);
  if (codeset == NULL || strcmp(codeset, "UTF-8") != 0) setlocale(LC_CTYPE, "C.UTF-8");
  // Before anything that initialises libedit: it takes the key reader at its start.
  if (wake[0] >= 0) *ed.rl_getc_function = read_key;
  *ed.rl_readline_name = name;
  *ed.rl_attempted_completion_function = complete;
  *ed.rl_basic_word_break_characters = " \t";
  ed.using_history();
  ed.stifle_history(max_history);
  free(history_file);
  history_file = history_path ? strdup(history_path) : NULL;
  if (history_file) ed.read_history(history_file);
  return 0;
}

const char *mfe_load_error(void) {
  pthread_once(&load_once, load);
  return loaded ? NULL : load_error;
}

// libedit is not thread-safe: it is touched from the reading thread alone. A line
// printed from another thread while a line is being edited is queued, and the reading
// thread prints it from read_key, where libedit waits for a key with its display at
// rest: back to the start of the prompt's line, clear it, print, then draw the prompt
// and the half-typed line again below. (Printing and redrawing from the printing thread
// raced libedit's echo of a key and glued an event onto the typed text.)
static pthread_mutex_t print_lock = PTHREAD_MUTEX_INITIALIZER;
static int reading;
static char *queued;         // lines to print, each ending in '\n'
static size_t queued_length;

// Prints the queued lines plainly (under print_lock); returns whether there were any.
static int print_queued_locked(int above_prompt) {
  if (queued_length == 0) return 0;
  if (above_prompt) fputs("\r\033[K", stdout);
  fwrite(queued, 1, queued_length, stdout);
  fflush(stdout);
  queued_length = 0;
  return 1;
}

// The first character of s[0..length): its code point, *used set to its bytes. Decoded
// strictly: bytes that are not UTF-8 (a byte that never leads, an overlong form, a
// surrogate, past U+10FFFF, a sequence cut short) give U+FFFD, one for each maximal
// subpart of an ill-formed sequence (a lead byte and the continuation bytes it may still
// take), and the byte that broke a sequence is left for the next character, so an Enter
// or an ESC right after a bad byte still acts. -1 (*used 0) when s is a well-formed start
// cut short and more may come; at the end of input (at_end) that start is one U+FFFD.
static int decode_utf8(const unsigned char *s, size_t length, int at_end, size_t *used) {
  unsigned char lead = s[0];
  *used = 1;
  if (lead < 0x80) return lead;
  size_t more;
  int code;
  unsigned char low = 0x80, high = 0xBF;  // the range of the byte after the lead
  if (lead >= 0xC2 && lead <= 0xDF) {
    more = 1, code = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    more = 2, code = lead & 0x0F;
    if (lead == 0xE0) low = 0xA0;   // below: overlong
    if (lead == 0xED) high = 0x9F;  // above: a surrogate
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    more = 3, code = lead & 0x07;
    if (lead == 0xF0) low = 0x90;   // below: overlong
    if (lead == 0xF4) high = 0x8F;  // above: past U+10FFFF
  } else {
    return 0xFFFD;  // a continuation byte, C0 or C1 (overlong leads), F5 to FF
  }
  for (size_t i = 1; i <= more; i++) {
    if (i >= length) {
      if (!at_end) { *used = 0; return -1; }
      *used = i;
      return 0xFFFD;
    }
    if (s[i] < low || s[i] > high) { *used = i; return 0xFFFD; }
    code = (code << 6) | (s[i] & 0x3F);
    low = 0x80, high = 0xBF;
  }
  *used = more + 1;
  return code;
}

// Bytes read but not yet given to libedit: a character's start, or what came after an
// ill-formed part. The reading thread's alone.
static unsigned char held[4];
static size_t held_length;

// The first character of `held`, taken out of it (-1: more bytes are needed).
static int take_held(int at_end) {
  size_t used;
  int code = decode_utf8(held, held_length, at_end, &used);
  if (code < 0) return -1;
  memmove(held, held + used, held_length - used);
  held_length -= used;
  return code;
}

// libedit's key reader: prints what other threads queued, then waits for a key or for
// more to print. Returns one character (UTF-8 decoded strictly, decode_utf8: libedit
// takes the value as a wide character), or -1 at end of input.
static int read_key(FILE *stream) {
  int fd = fileno(stream);
  for (;;) {
    if (held_length > 0) {
      int code = take_held(0);
      if (code >= 0) return code;
      unsigned char next;
      ssize_t n;
      do { n = read(fd, &next, 1); } while (n < 0 && errno == EINTR);
      if (n <= 0) return take_held(1);
      held[held_length++] = next;
      continue;
    }
    pthread_mutex_lock(&print_lock);
    if (print_queued_locked(1)) ed.rl_forced_update_display();
    fflush(stdout);
    pthread_mutex_unlock(&print_lock);
    struct pollfd fds[2] = {{.fd = fd, .events = POLLIN}, {.fd = wake[0], .events = POLLIN}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (fds[1].revents & POLLIN) {
      char drain[64];
      while (read(wake[0], drain, sizeof drain) == (ssize_t)sizeof drain) {}
    }
    if (!(fds[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    unsigned char byte;
    ssize_t got = read(fd, &byte, 1);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got <= 0) return -1;
    held[held_length++] = byte;  // decoded at the top of the loop, with what it needs after it
  }
}

long mfe_readline(const char *prompt) {
  free(pending);
  pending = NULL;
  if (!loaded) return -1;
  pthread_mutex_lock(&print_lock);
  print_queued_locked(0);
  reading = 1;
  pthread_mutex_unlock(&print_lock);
  pending = ed.readline(prompt);
  pthread_mutex_lock(&print_lock);
  reading = 0;
  print_queued_locked(0);  // what came after the last key: below the line just entered
  pthread_mutex_unlock(&print_lock);
  if (pending == NULL) return -1;
  const char *p = pending;
  while (*p == ' ' || *p == '\t') p++;
  if (*p) {
    int length = *ed.history_length;
    HIST_ENTRY *last = length > 0 ? ed.history_get(*ed.history_base + length - 1) : NULL;
    if (last == NULL || last->line == NULL || strcmp(last->line, pending) != 0) ed.add_history(pending);
  }
  return (long)strlen(pending);
}

void mfe_print(const char *text) {
  pthread_mutex_lock(&print_lock);
  if (reading && wake[0] >= 0) {
    size_t length = strlen(text);
    char *grown = realloc(queued, queued_length + length + 1);
    if (grown != NULL) {
      queued = grown;
      memcpy(queued + queued_length, text, length);
      queued[queued_length + length] = '\n';
      queued_length += length + 1;
      char one = 1;
      (void)!write(wake[1], &one, 1);  // a full pipe already wakes the reader
    }
  } else {
    fputs(text, stdout);
    fputc('\n', stdout);
    fflush(stdout);
  }
  pthread_mutex_unlock(&print_lock);
}

void mfe_take_line(char *buffer, size_t capacity) {
  if (capacity == 0) return;
  size_t length = pending ? strlen(pending) : 0;
  if (length >= capacity) length = capacity - 1;
  if (length) memcpy(buffer, pending, length);
  buffer[length] = '\0';
  free(pending);
  pending = NULL;
}

void mfe_set_completions(const char *spec) {
  free_completions();
  size_t count = 0;
  for (const char *p = spec; *p; p++) if (*p == '\n') count++;
  if (spec[0] && spec[strlen(spec) - 1] != '\n') count++;
  lines = calloc(count ? count : 1, sizeof(char *));
  line_word_counts = calloc(count ? count : 1, sizeof(size_t));
  if (lines == NULL || line_word_counts == NULL) { free_completions(); return; }
  const char *p = spec;
  while (*p && line_count < count) {
    size_t length = strcspn(p, "\n");
    char *line = malloc(length + 1);
    if (line == NULL) break;
    memcpy(line, p, length);
    line[length] = '\0';
    size_t words = 1;
    for (size_t k = 0; k < length; k++) if (line[k] == '\t') { line[k] = '\0'; words++; }
    lines[line_count] = line;
    line_word_counts[line_count] = words;
    line_count++;
    p += length;
    if (*p == '\n') p++;
  }
}

void mfe_close(void) {
  if (loaded && history_file) ed.write_history(history_file);
  free(history_file);
  history_file = NULL;
  free(pending);
  pending = NULL;
  free_completions();
}
