/* lua-empty-hook: runs a Lua 5.4 script with an empty C line hook (mask LUA_MASKLINE),
 * the floor coverage's line counting is measured against (bench/lua_overhead.sh).
 * With EMPTY_HOOK_CALLS=1 the hook also takes every call and asks Lua for the called
 * function (lua_getinfo "f"), the least the public debug API allows for knowing which
 * function a frame runs, and does nothing else with it.
 *   [EMPTY_HOOK_CALLS=1] lua-empty-hook SCRIPT [ARGS...] */
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include <stdio.h>
#include <stdlib.h>

static void Empty(lua_State *L, lua_Debug *ar) {
    (void)L;
    (void)ar;
}

static void EmptyWithCalls(lua_State *L, lua_Debug *ar) {
    if (ar->event == LUA_HOOKLINE) return;
    lua_getinfo(L, "f", ar);
    lua_pop(L, 1);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: lua-empty-hook SCRIPT [ARGS...]\n");
        return 2;
    }
    lua_State *L = luaL_newstate();
    if (L == NULL) return 1;
    luaL_openlibs(L);
    lua_createtable(L, argc - 1, 1);
    for (int k = 1; k < argc; ++k) {
        lua_pushstring(L, argv[k]);
        lua_rawseti(L, -2, k - 1);
    }
    lua_setglobal(L, "arg");
    int status = luaL_loadfile(L, argv[1]);
    if (status == LUA_OK) {
        for (int k = 2; k < argc; ++k) lua_pushstring(L, argv[k]);
        const char *calls = getenv("EMPTY_HOOK_CALLS");
        if (calls != NULL && calls[0] == '1') {
            lua_sethook(L, EmptyWithCalls, LUA_MASKLINE | LUA_MASKCALL, 0);
        } else {
            lua_sethook(L, Empty, LUA_MASKLINE, 0);
        }
        status = lua_pcall(L, argc - 2, 0, 0);
    }
    if (status != LUA_OK) fprintf(stderr, "lua-empty-hook: %s\n", lua_tostring(L, -1));
    lua_close(L);
    return status == LUA_OK ? 0 : 1;
}
