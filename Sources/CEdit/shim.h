// Debian's libedit-dev: BSD editline with its readline-compatible API
// (pkg-config libedit). readline.h needs FILE from stdio.h first.
#include <stdio.h>
#include <editline/readline.h>
