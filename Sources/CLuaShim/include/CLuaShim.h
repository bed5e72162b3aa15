#ifndef CLUASHIM_H
#define CLUASHIM_H
#include <lua.h>
#include <lualib.h>
#include <lauxlib.h>
#endif
