#ifndef CEDITSHIM_H
#define CEDITSHIM_H

#include <stddef.h>

// The prompt of `moonflow run`: libedit's line editor, history and completion
// behind plain functions, so Swift passes and receives only strings it owns.
// libedit is not linked: mfe_open loads it (dlopen) the first time, so `moonflow`
// starts without mapping it. One prompt per process (libedit's readline API is
// global); call these from one thread (mfe_print from any).

/// Loads libedit (once) and starts the editor: `name` for ~/.editrc (`moonflow`),
/// history read from `history_path` (NULL for none) and kept to `max_history` lines.
/// Returns 0, or -1 when libedit could not be loaded (mfe_load_error says why): then
/// mfe_readline only returns -1 and the caller reads lines itself; mfe_print,
/// mfe_set_completions and mfe_close still work.
int mfe_open(const char *name, const char *history_path, int max_history);

/// Why libedit could not be loaded (dlerror's text, e.g. "libedit.so.2: cannot open
/// shared object file: No such file or directory"), or NULL when it is loaded.
/// Loads it first if nothing has tried yet.
const char *mfe_load_error(void);

/// Reads a line with editing. Returns its length in bytes, or -1 at the end
/// of input (Ctrl-D on an empty line) or without libedit. A non-blank line different
/// from the previous one goes into the history. Fetch the text with mfe_take_line.
long mfe_readline(const char *prompt);
/// Prints `text` and a newline on standard output from any thread. While a line is
/// being edited, it goes above the prompt, which is then drawn again with what was typed.
void mfe_print(const char *text);

/// Copies the line mfe_readline read (at most `capacity` - 1 bytes, then a
/// NUL) into `buffer` and forgets it.
void mfe_take_line(char *buffer, size_t capacity);

/// What Tab completes: `spec` has one line per word list. The first word of
/// a line is completed from the first words of all lines; after it, a word
/// is completed from the rest of its line (`increment\tby=`). Fields ending
/// in `=` get no space after them.
void mfe_set_completions(const char *spec);

/// Writes the history back (when a path was given and libedit is loaded).
void mfe_close(void);

#endif
