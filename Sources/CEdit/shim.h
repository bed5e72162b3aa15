// Debian's libedit-dev: BSD editline with its readline-compatible API, for its
// types and prototypes only. Nothing links libedit: CEditShim loads it with dlopen
// when the prompt opens, so `moonflow` starts without mapping it (scripts/check-tool).
// readline.h needs FILE from stdio.h first.
#include <stdio.h>
#include <editline/readline.h>
