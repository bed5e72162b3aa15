// Debian's liblua5.4-dev puts the headers in /usr/include/lua5.4 (pkg-config lua5.4).
#include <lua.h>
#include <lualib.h>
#include <lauxlib.h>
