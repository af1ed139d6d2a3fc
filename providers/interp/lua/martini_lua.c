/* martini-lua: runs a Lua 5.4 script under Martini's profiler clients.
 *
 *   martini-lua [--client NAME[=OPTIONS]]... [--output DIR] SCRIPT [ARGS...]
 *
 * A Lua host written in C against the interpreter C ABI (martini/interp.h) alone: the
 * worked example of docs/interpreter-abi.md. Lua's call and return hooks become
 * martini_enter and martini_exit:
 *   - a function is registered the first time it is called: a Lua function by its
 *     chunk and first line, a C function by its address;
 *   - the stack id of a frame is the address of its CallInfo (lua_Debug.i_ci), which
 *     Lua reuses for a tail call (so the replaced frame exits) and keeps for the life
 *     of the frame; a return names the caller's CallInfo, so frames an error unwound
 *     without return hooks exit at the next return that passes them;
 *   - each coroutine is a virtual thread (the _vt functions), started at its first
 *     call and ended when its body returns.
 * The exit status is the script's: 0, or 1 when it raised an error (printed with its
 * traceback, as lua does) or Martini could not start.
 */
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "martini/interp.h"

static const char kUsage[] =
    "usage: martini-lua [--client NAME[=OPTIONS]]... [--output DIR] SCRIPT [ARGS...]\n"
    "\n"
    "Runs a Lua 5.4 script with Martini's profiler clients, through the interpreter C ABI.\n"
    "\n"
    "  --client SPEC   a bundled client's name (cgprof, callcount, ...) or a client\n"
    "                  library's path, with optional =OPTIONS; repeatable; default: cgprof\n"
    "  --output DIR    where clients write their files (default: their own)\n"
    "  -h, --help      this text\n"
    "\n"
    "Functions are named as defined (function Tree:put -> Tree:put), else by how they\n"
    "were first called, and grouped by script (class \"shop\" for shop.lua); C functions\n"
    "are in class \"[C]\".\n"
    "Bundled clients are looked up in $MARTINI_CLIENT_PATH, then where Martini keeps them.\n";

static martini_interp *gInterp;
static lua_State *gMain;
static int gReported; /* one ABI error is printed; the run goes on */

static void Report(const char *what, martini_status s) {
    if (s == MARTINI_OK || s == MARTINI_E_PHASE || gReported) return;  /* E_PHASE: the run has ended (a signal) */
    gReported = 1;
    fprintf(stderr, "martini-lua: %s: %s (%s); further errors are not printed\n", what, martini_last_error(),
            martini_status_name(s));
}

/* ---- Method ids: an open-addressing table from a function's key to its id ---------- */

/* A covered function's line counters (Martini's, martini_coverage_counters): the
 * counter of line L is counts[row[L - first] - 1] when row[L - first] is not 0. */
typedef struct {
    uint64_t *counts;
    int first;
    int span;
    uint32_t *row;
} Coverage;

typedef struct {
    uintptr_t a; /* Lua: the chunk's source string; C: the function's address */
    intptr_t b;  /* Lua: the first line; C: -1 */
    martini_method_id id;
    Coverage *cov; /* NULL: not covered */
} MethodSlot;

static MethodSlot *gSlots;
static size_t gCapacity; /* a power of two */
static size_t gUsed;
static martini_method_id gNextId = 1;

static size_t SlotOf(uintptr_t a, intptr_t b) {
    uint64_t h = (uint64_t)a * 0x9E3779B97F4A7C15ull ^ (uint64_t)b * 0xC2B2AE3D27D4EB4Full;
    h ^= h >> 29;
    return (size_t)h & (gCapacity - 1);
}

static int Grow(void) {
    size_t old = gCapacity;
    MethodSlot *oldSlots = gSlots;
    gCapacity = old ? old * 2 : 1024;
    gSlots = calloc(gCapacity, sizeof *gSlots);
    if (gSlots == NULL) {
        gSlots = oldSlots;
        gCapacity = old;
        return 0;
    }
    for (size_t i = 0; i < old; ++i) {
        if (oldSlots[i].id == 0) continue;
        size_t j = SlotOf(oldSlots[i].a, oldSlots[i].b);
        while (gSlots[j].id != 0) j = (j + 1) & (gCapacity - 1);
        gSlots[j] = oldSlots[i];
    }
    free(oldSlots);
    return 1;
}

/* The slot for the key: its id, or an empty slot to fill (0 when out of memory). */
static MethodSlot *Find(uintptr_t a, intptr_t b) {
    if ((gUsed + 1) * 2 > gCapacity && !Grow()) return NULL;
    size_t j = SlotOf(a, b);
    while (gSlots[j].id != 0 && (gSlots[j].a != a || gSlots[j].b != b)) j = (j + 1) & (gCapacity - 1);
    return &gSlots[j];
}

/* "examples/lua/shop.lua" -> "shop" */
static void ChunkName(const char *shortSrc, char *out, size_t size) {
    const char *base = strrchr(shortSrc, '/');
    base = base ? base + 1 : shortSrc;
    size_t n = strlen(base);
    if (n > 4 && strcmp(base + n - 4, ".lua") == 0) n -= 4;
    if (n >= size) n = size - 1;
    memcpy(out, base, n);
    out[n] = '\0';
}

static int IsNameChar(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
           c == ':';
}

/* ---- Script sources: each file read once, for the names of its functions ------------ */

typedef struct SourceFile {
    char *source;  /* Lua's source string of the chunk: "@path" */
    char *text;    /* the file, each '\n' replaced by '\0' */
    char **lines;  /* lines[0] is line 1 */
    int count;
    struct SourceFile *next;
} SourceFile;

static SourceFile *gSources;

/* The lines of chunk `source` ("@path"), read the first time it is asked for; NULL when
 * the chunk is not a file or the file cannot be read (then it is not tried again). */
static const SourceFile *SourceOf(const char *source) {
    for (SourceFile *s = gSources; s != NULL; s = s->next) {
        if (strcmp(s->source, source) == 0) return s->lines ? s : NULL;
    }
    SourceFile *s = calloc(1, sizeof *s);
    if (s == NULL) return NULL;
    const size_t len = strlen(source) + 1;
    s->source = malloc(len);
    if (s->source != NULL) memcpy(s->source, source, len);
    if (s->source == NULL) {
        free(s);
        return NULL;
    }
    s->next = gSources;
    gSources = s;
    FILE *f = fopen(source + 1, "rb");
    if (f == NULL) return NULL;
    long size = -1;
    if (fseek(f, 0, SEEK_END) == 0) size = ftell(f);
    if (size >= 0 && fseek(f, 0, SEEK_SET) == 0) s->text = malloc((size_t)size + 1);
    if (s->text != NULL && fread(s->text, 1, (size_t)size, f) == (size_t)size) {
        s->text[size] = '\0';
        int lines = 1;
        for (long i = 0; i < size; ++i) lines += s->text[i] == '\n';
        s->lines = malloc((size_t)lines * sizeof *s->lines);
        if (s->lines != NULL) {
            s->lines[s->count++] = s->text;
            for (long i = 0; i < size; ++i) {
                if (s->text[i] != '\n') continue;
                s->text[i] = '\0';
                s->lines[s->count++] = s->text + i + 1;
            }
        }
    }
    fclose(f);
    return s->lines ? s : NULL;
}

static void FreeSources(void) {
    while (gSources != NULL) {
        SourceFile *next = gSources->next;
        free(gSources->source);
        free(gSources->text);
        free(gSources->lines);
        free(gSources);
        gSources = next;
    }
}

/* The name a function has where it is defined, from its first source line:
 * "function Tree:put(" -> Tree:put, "local function find(" -> find,
 * "local take = function(" -> take. 0 when the chunk is not a file or the line says
 * nothing (an anonymous function passed as an argument). */
static int NameFromSource(const char *source, int line, char *out, size_t size) {
    if (source == NULL || source[0] != '@' || line <= 0) return 0;
    const SourceFile *file = SourceOf(source);
    if (file == NULL || line > file->count) return 0;
    const char *text = file->lines[line - 1];
    const char *kw = strstr(text, "function");
    if (kw == NULL) return 0;
    const char *p = kw + 8;
    while (*p == ' ' || *p == '\t') ++p;
    const char *start = p, *end = p;
    if (IsNameChar(*p)) { /* function NAME( */
        while (IsNameChar(*end)) ++end;
    } else { /* NAME = function( */
        const char *eq = kw; /* only blanks between '=' and "function" */
        while (eq > text && (eq[-1] == ' ' || eq[-1] == '\t')) --eq;
        if (eq == text || eq[-1] != '=') return 0;
        end = eq - 1;
        while (end > text && (end[-1] == ' ' || end[-1] == '\t')) --end;
        start = end;
        while (start > text && IsNameChar(start[-1])) --start;
    }
    const size_t len = (size_t)(end - start);
    if (len == 0 || len >= size) return 0;
    memcpy(out, start, len);
    out[len] = '\0';
    return 1;
}

static int gCoverage; /* some client covers functions: lines are counted */
static int gCalls;    /* some client wants calls: enter and exit are reported */

static int CompareInts(const void *x, const void *y) {
    const int a = *(const int *)x, b = *(const int *)y;
    return (a > b) - (a < b);
}

/* The lines of the Lua function in `ar` that have code, sorted, as line-table rows
 * (offset = line): the blocks coverage counts. Returns the number of rows (0 when out
 * of memory; *rows is then NULL). */
static size_t ActiveLines(lua_State *L, lua_Debug *ar, martini_line **rows) {
    *rows = NULL;
    lua_getinfo(L, "L", ar); /* pushes a table whose keys are the active lines */
    if (!lua_istable(L, -1)) {
        lua_pop(L, 1);
        return 0;
    }
    size_t n = 0, capacity = 16;
    int *lines = malloc(capacity * sizeof *lines);
    lua_pushnil(L);
    while (lines != NULL && lua_next(L, -2) != 0) {
        lua_pop(L, 1);
        if (n == capacity) {
            int *grown = realloc(lines, (capacity *= 2) * sizeof *lines);
            if (grown == NULL) free(lines);
            lines = grown;
            if (lines == NULL) break;
        }
        lines[n++] = (int)lua_tointeger(L, -1);
    }
    if (lines == NULL) {
        lua_settop(L, lua_gettop(L) - (lua_istable(L, -1) ? 1 : 2)); /* the table, maybe a key */
        return 0;
    }
    lua_pop(L, 1);
    qsort(lines, n, sizeof *lines, CompareInts);
    *rows = malloc((n ? n : 1) * sizeof **rows);
    for (size_t i = 0; *rows != NULL && i < n; ++i) {
        (*rows)[i].offset = (uint32_t)lines[i];
        (*rows)[i].line = (uint32_t)lines[i];
    }
    free(lines);
    return *rows ? n : 0;
}

/* The counters of covered method `id` registered with `rows`, or NULL. */
static Coverage *CoverageOf(martini_method_id id, const martini_line *rows, size_t n) {
    uint64_t *counts;
    size_t count;
    if (n == 0 || !martini_method_covered(gInterp, id)) return NULL;
    martini_status s = martini_coverage_counters(gInterp, id, &counts, &count);
    if (s != MARTINI_OK) {
        Report("martini_coverage_counters", s);
        return NULL;
    }
    Coverage *cov = calloc(1, sizeof *cov);
    if (cov == NULL) return NULL;
    cov->counts = counts;
    cov->first = (int)rows[0].line;
    cov->span = (int)rows[n - 1].line - cov->first + 1;
    cov->row = calloc((size_t)cov->span, sizeof *cov->row);
    if (cov->row == NULL) {
        free(cov);
        return NULL;
    }
    for (size_t i = 0; i < n && i < count; ++i) cov->row[rows[i].line - (uint32_t)cov->first] = (uint32_t)i + 1;
    return cov;
}

/* The slot of the function running in `ar` (a hook's), registered on first sight;
 * NULL when it could not be. */
static MethodSlot *SlotOfFunction(lua_State *L, lua_Debug *ar);

/* The slots of the functions called last, by the function value's address (a closure,
 * or a C function): one lua_getinfo(L, "f") per call instead of "S", which formats the
 * chunk's name. A copy of the slot (its id and counters never change once registered;
 * the table they live in moves when it grows). Each cached function is kept alive
 * through a registry reference until its entry is replaced, so that its address
 * cannot name another function meanwhile. */
enum { kCalled = 1024 };
static struct {
    const void *fn;
    int ref;
    MethodSlot slot;
} gCalled[kCalled];

static const MethodSlot *SlotOfCall(lua_State *L, lua_Debug *ar) {
    lua_getinfo(L, "f", ar);
    const void *fn = lua_topointer(L, -1);
    const size_t k = ((uintptr_t)fn >> 4) & (kCalled - 1);
    if (fn != NULL && gCalled[k].fn == fn) {
        lua_pop(L, 1);
        return &gCalled[k].slot;
    }
    if (gCalled[k].fn != NULL) luaL_unref(L, LUA_REGISTRYINDEX, gCalled[k].ref);
    gCalled[k].fn = NULL;
    const MethodSlot *slot = SlotOfFunction(L, ar);
    if (fn == NULL || slot == NULL) {
        lua_pop(L, 1);
        return slot;
    }
    gCalled[k].ref = luaL_ref(L, LUA_REGISTRYINDEX); /* pops the function */
    gCalled[k].fn = fn;
    gCalled[k].slot = *slot;
    return &gCalled[k].slot;
}

static MethodSlot *SlotOfFunction(lua_State *L, lua_Debug *ar) {
    lua_getinfo(L, "S", ar);
    const int isC = ar->what[0] == 'C';
    uintptr_t a;
    intptr_t b;
    if (isC) {
        lua_getinfo(L, "f", ar);
        a = (uintptr_t)lua_tocfunction(L, -1);
        lua_pop(L, 1);
        b = -1;
    } else {
        a = (uintptr_t)ar->source;
        b = ar->linedefined;
    }
    MethodSlot *slot = Find(a, b);
    if (slot == NULL || slot->id != 0) return slot;

    char name[256], cls[256];
    if (ar->what[0] == 'm') {
        snprintf(name, sizeof name, "(main chunk)");
    } else if (!isC && NameFromSource(ar->source, ar->linedefined, name, sizeof name)) {
        /* named as defined */
    } else if (lua_getinfo(L, "n", ar), ar->name != NULL) { /* named as called */
        snprintf(name, sizeof name, "%s", ar->name);
    } else if (isC) {
        snprintf(name, sizeof name, "(C function %p)", (void *)a);
    } else {
        snprintf(name, sizeof name, "(function at line %d)", ar->linedefined);
    }
    if (isC) {
        snprintf(cls, sizeof cls, "[C]");
    } else {
        ChunkName(ar->short_src, cls, sizeof cls);
    }
    martini_line line = {0, ar->linedefined > 0 ? (uint32_t)ar->linedefined : 0};
    martini_line *rows = NULL;
    /* Covered: one row per line with code, so that each line is a block. */
    const size_t rowCount = gCoverage && !isC ? ActiveLines(L, ar, &rows) : 0;
    martini_method_info info = {0};
    info.name = name;
    info.class_name = cls;
    info.source_file = isC ? NULL : ar->short_src;
    info.flags = isC ? MARTINI_METHOD_NATIVE : MARTINI_METHOD_PUBLIC;
    info.lines = isC ? NULL : rowCount ? rows : &line;
    info.line_count = isC ? 0 : rowCount ? rowCount : 1;
    const martini_method_id id = gNextId++;
    martini_status s = martini_method_register(gInterp, id, &info);
    if (s != MARTINI_OK) {
        free(rows);
        Report("martini_method_register", s);
        return NULL;
    }
    slot->a = a;
    slot->b = b;
    slot->id = id;
    slot->cov = CoverageOf(id, rows, rowCount);
    ++gUsed;
    free(rows);
    return slot;
}


/* ---- Coroutines: virtual threads ---------------------------------------------------- */

/* A coroutine's state in the same table, under the key (its lua_State, -2). */
enum { kRunning = 1, kEnded = 2 };
static unsigned gCoroutineSerial;

/* The virtual thread of coroutine L, started on first use (0 for the main state, or
 * when it could not be started). */
static lua_State *gLastCoroutine; /* the one seen last: most events follow one another in it */

static martini_vthread VThreadOf(lua_State *L) {
    if (L == gMain) return 0;
    const martini_vthread vt = (martini_vthread)(uintptr_t)L;
    if (L == gLastCoroutine) return vt;
    MethodSlot *slot = Find((uintptr_t)L, -2);
    if (slot == NULL) return 0;
    if (slot->id == kRunning) {
        gLastCoroutine = L;
        return vt;
    }
    /* New, or a new coroutine in the memory of an ended one. */
    char name[32];
    snprintf(name, sizeof name, "coroutine-%u", ++gCoroutineSerial);
    martini_status s = martini_thread_start_vt(gInterp, vt, name, 0);
    if (s != MARTINI_OK) {
        Report("martini_thread_start_vt", s);
        return 0;
    }
    if (slot->id == 0) ++gUsed;
    slot->a = (uintptr_t)L;
    slot->b = -2;
    slot->id = kRunning;
    gLastCoroutine = L;
    return vt;
}

/* Its body returned: the coroutine is dead. */
static void EndCoroutine(lua_State *L) {
    MethodSlot *slot = Find((uintptr_t)L, -2);
    if (slot == NULL || slot->id != kRunning) return;
    slot->id = kEnded;
    if (gLastCoroutine == L) gLastCoroutine = NULL;
    Report("martini_thread_end_vt", martini_thread_end_vt(gInterp, (martini_vthread)(uintptr_t)L));
}

/* ---- Coverage: the line hook ---------------------------------------------------------- */

/* The frame (its CallInfo) each function was last called in, so that the line hook
 * finds the running function's counters without asking Lua for its source: set by the
 * call hook, which runs for every new frame; a frame missing here is looked up again. */
enum { kFrames = 4096 };
static struct {
    void *ci;
    Coverage *cov;
} gFrames[kFrames];

static size_t FrameSlot(void *ci) { return ((uintptr_t)ci >> 4) & (kFrames - 1); }

/* The frame of `ar` runs the function of `slot` (NULL: one not registered). */
static void NoteSlot(const lua_Debug *ar, const MethodSlot *slot) {
    const size_t k = FrameSlot(ar->i_ci);
    gFrames[k].ci = ar->i_ci;
    gFrames[k].cov = slot ? slot->cov : NULL;
}

static void NoteFrame(lua_State *L, lua_Debug *ar) { NoteSlot(ar, SlotOfCall(L, ar)); }

static void CountLine(lua_State *L, lua_Debug *ar) {
    const size_t k = FrameSlot(ar->i_ci);
    if (gFrames[k].ci != ar->i_ci) NoteFrame(L, ar);
    const Coverage *cov = gFrames[k].cov;
    if (cov == NULL) return;
    const unsigned at = (unsigned)(ar->currentline - cov->first);
    if (at >= (unsigned)cov->span || cov->row[at] == 0) return;
    uint64_t *c = &cov->counts[cov->row[at] - 1];
    __atomic_store_n(c, *c + 1, __ATOMIC_RELAXED); /* one OS thread: Martini reads it atomically */
}

/* Coverage without calls: the call hook only notes frames, the line hook counts. */
static void CoverageHook(lua_State *L, lua_Debug *ar) {
    if (ar->event == LUA_HOOKLINE) {
        CountLine(L, ar);
    } else if (ar->event == LUA_HOOKCALL || ar->event == LUA_HOOKTAILCALL) {
        NoteFrame(L, ar);
    }
}

static void FreeCoverage(void) {
    for (size_t i = 0; i < gCapacity; ++i) {
        if (gSlots[i].cov == NULL) continue;
        free(gSlots[i].cov->row);
        free(gSlots[i].cov);
    }
}

/* ---- The hook ------------------------------------------------------------------------ */

static void Hook(lua_State *L, lua_Debug *ar) {
    if (ar->event == LUA_HOOKLINE) {
        CountLine(L, ar);
        return;
    }
    const martini_vthread vt = VThreadOf(L);
    if (L != gMain && vt == 0) return; /* could not start its virtual thread: already said */
    if (ar->event == LUA_HOOKCALL || ar->event == LUA_HOOKTAILCALL) {
        const martini_stack_id stack = (martini_stack_id)(uintptr_t)ar->i_ci;
        /* One lookup for the call and its frame's counters. */
        const MethodSlot *slot = SlotOfCall(L, ar);
        if (gCoverage) NoteSlot(ar, slot);
        const martini_method_id method = slot ? slot->id : 0;
        if (method == 0) return;
        Report("martini_enter", vt ? martini_enter_vt(gInterp, vt, method, stack)
                                   : martini_enter(gInterp, method, stack));
    } else if (ar->event == LUA_HOOKRET) {
        lua_Debug caller;
        const martini_stack_id to =
            lua_getstack(L, 1, &caller) ? (martini_stack_id)(uintptr_t)caller.i_ci : MARTINI_STACK_BASE;
        Report("martini_exit", vt ? martini_exit_vt(gInterp, vt, to) : martini_exit(gInterp, to));
        if (vt != 0 && to == MARTINI_STACK_BASE) EndCoroutine(L);
    }
}

/* ---- main ------------------------------------------------------------------------------ */

static int Traceback(lua_State *L) {
    const char *msg = lua_tostring(L, 1);
    if (msg == NULL) msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    luaL_traceback(L, L, msg, 1);
    return 1;
}

/* os.exit, or exit from a C library deep in the script: the profile is written, with
 * what the script printed flushed before it. */
static void EndAtExit(void) {
    if (gInterp == NULL) return;
    fflush(stdout);
    martini_interp_shutdown(gInterp);
}

int main(int argc, char **argv) {
    size_t clientsSize = 1;
    char *clients = calloc(1, 1);
    const char *output = NULL;
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; ++i) {
        const char *arg = argv[i];
        const char *value = NULL;
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            fputs(kUsage, stdout);
            return 0;
        } else if (strcmp(arg, "--") == 0) {
            ++i;
            break;
        } else if (strcmp(arg, "--client") == 0 || strcmp(arg, "--output") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "martini-lua: %s needs a value\n%s", arg, kUsage);
                return 1;
            }
            value = argv[++i];
        } else if (strncmp(arg, "--client=", 9) == 0 || strncmp(arg, "--output=", 9) == 0) {
            value = arg + 9;
        } else {
            fprintf(stderr, "martini-lua: unknown option '%s'\n%s", arg, kUsage);
            return 1;
        }
        if (arg[2] == 'o') {
            output = value;
            continue;
        }
        const size_t n = strlen(value);
        char *grown = realloc(clients, clientsSize + n + 1);
        if (grown == NULL) return 1;
        clients = grown;
        if (clientsSize > 1) strcat(clients, ";");
        strcat(clients, value);
        clientsSize += n + 1;
    }
    if (i >= argc) {
        fprintf(stderr, "martini-lua: no script given\n%s", kUsage);
        return 1;
    }
    const char *script = argv[i];

    martini_config config = {0};
    config.abi_version = MARTINI_INTERP_ABI_VERSION;
    config.runtime_name = "Lua";
    config.runtime_version = LUA_VERSION_MAJOR "." LUA_VERSION_MINOR "." LUA_VERSION_RELEASE;
    config.clients = clientsSize > 1 ? clients : "cgprof";
    config.output_dir = output;
    config.main_thread_name = "main";
    martini_status s = martini_interp_create(&config, &gInterp);
    if (s != MARTINI_OK) {
        fprintf(stderr, "martini-lua: Martini could not start: %s\n", martini_last_error());
        return 1;
    }
    /* However the script ends: an error, os.exit (atexit), SIGTERM, SIGINT or SIGHUP
     * (the run ends, then the signal ends the process), the clients write the profile. */
    atexit(EndAtExit);
    if (martini_interp_end_on_signals(gInterp) != MARTINI_OK) {
        fprintf(stderr, "martini-lua: %s; a signal will end the script without its profile\n", martini_last_error());
    }

    lua_State *L = luaL_newstate();
    if (L == NULL) {
        fprintf(stderr, "martini-lua: out of memory\n");
        return 1;
    }
    gMain = L;
    luaL_openlibs(L);
    /* arg: the script at 0, its arguments from 1, as the lua command sets it */
    lua_createtable(L, argc - i - 1, 1);
    for (int k = i; k < argc; ++k) {
        lua_pushstring(L, argv[k]);
        lua_rawseti(L, -2, k - i);
    }
    lua_setglobal(L, "arg");

    int status = 0;
    lua_pushcfunction(L, Traceback);
    if (luaL_loadfile(L, script) != LUA_OK) {
        fprintf(stderr, "martini-lua: %s\n", lua_tostring(L, -1));
        status = 1;
    } else {
        for (int k = i + 1; k < argc; ++k) lua_pushstring(L, argv[k]);
        /* Coverage alone needs no returns; the line hook only where lines are counted. */
        gCoverage = martini_wants(gInterp, MARTINI_WANTS_COVERAGE);
        gCalls = martini_wants(gInterp, MARTINI_WANTS_CALLS);
        if (gCoverage && !gCalls) {
            lua_sethook(L, CoverageHook, LUA_MASKCALL | LUA_MASKLINE, 0);
        } else {
            lua_sethook(L, Hook, LUA_MASKCALL | LUA_MASKRET | (gCoverage ? LUA_MASKLINE : 0), 0);
        }
        if (lua_pcall(L, argc - i - 1, 0, 1) != LUA_OK) {
            fprintf(stderr, "martini-lua: %s\n", lua_tostring(L, -1));
            status = 1;
        }
        lua_sethook(L, NULL, 0, 0);
    }
    /* The profile covers the script, error or not; clients write it now, after what
     * the script printed. */
    fflush(stdout);
    martini_interp_destroy(gInterp);
    gInterp = NULL;
    lua_close(L);
    FreeCoverage();
    free(gSlots);
    FreeSources();
    free(clients);
    return status;
}
