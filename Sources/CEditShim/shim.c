#include "CEditShim.h"

#include <editline/readline.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static char *history_file = NULL;
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
  rl_attempted_completion_over = 1;  // never fall back to file names
  if (line_count == 0) return NULL;
  size_t total = 0;
  for (size_t i = 0; i < line_count; i++) total += line_word_counts[i];
  free(scratch);
  scratch = malloc(sizeof(char *) * (total + 1));
  if (scratch == NULL) return NULL;
  candidate_count = 0;
  // The first word typed on the line, if the word being completed is not it.
  const char *buffer = rl_line_buffer ? rl_line_buffer : "";
  while (*buffer == ' ') buffer++;
  size_t head_length = strcspn(buffer, " ");
  int completing_head = (buffer + head_length >= rl_line_buffer + start);
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
  rl_completion_append_character = ' ';
  if (!completing_head) rl_completion_append_character = '\0';
  return rl_completion_matches(text, generate);
}

void mfe_open(const char *name, const char *history_path, int max_history) {
  rl_readline_name = name;
  rl_attempted_completion_function = complete;
  rl_basic_word_break_characters = " \t";
  using_history();
  stifle_history(max_history);
  free(history_file);
  history_file = history_path ? strdup(history_path) : NULL;
  if (history_file) read_history(history_file);
}

// Whether readline is editing a line now (under print_lock): output from other
// threads then goes above the prompt, which is drawn again with what was typed.
static pthread_mutex_t print_lock = PTHREAD_MUTEX_INITIALIZER;
static int reading;

long mfe_readline(const char *prompt) {
  free(pending);
  pthread_mutex_lock(&print_lock);
  reading = 1;
  pthread_mutex_unlock(&print_lock);
  pending = readline(prompt);
  pthread_mutex_lock(&print_lock);
  reading = 0;
  pthread_mutex_unlock(&print_lock);
  if (pending == NULL) return -1;
  const char *p = pending;
  while (*p == ' ' || *p == '\t') p++;
  if (*p) {
    HIST_ENTRY *last = history_length > 0 ? history_get(history_base + history_length - 1) : NULL;
    if (last == NULL || last->line == NULL || strcmp(last->line, pending) != 0) add_history(pending);
  }
  return (long)strlen(pending);
}

void mfe_print(const char *text) {
  pthread_mutex_lock(&print_lock);
  if (reading) {
    // Back to the start of the prompt's line and clear it, print, then draw the
    // prompt and the half-typed line again below.
    fputs("\r\033[K", stdout);
    fputs(text, stdout);
    fputc('\n', stdout);
    fflush(stdout);
    rl_forced_update_display();
    fflush(stdout);
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
  if (history_file) write_history(history_file);
  free(pending);
  pending = NULL;
  free_completions();
}
