/* Martini interpreter C ABI: how an interpreter written in C reports its calls,
 * threads and code to Martini's profiler clients.
 *
 * The same model as the Quantify/PureCoverage interpreter interface:
 *   - the interpreter registers each method it runs (an id of its choosing, a name, a
 *     class, flags, a source file and a line table) before the first call of it;
 *   - a call is an entry with a stack id, a return is an exit naming the stack id of
 *     the frame returned to: the exit unwinds the shadow stack down to that frame, so
 *     frames left by an exception, a longjmp or a tail call need no events of their
 *     own;
 *   - threads are the calling OS threads, or virtual threads (the _vt functions) for
 *     interpreters that run their own threads or coroutines on OS threads;
 *   - code generated at run time is reported with its address range and line table.
 *
 * Every function returns a martini_status and never crashes on bad input: a NULL
 * pointer, an unknown id, a malformed line table or a call in the wrong phase gives an
 * error code, and martini_last_error() says in words what was wrong. Nothing already
 * collected is lost: an error leaves the state as it was.
 *
 * Threading: every function may be called from any thread. Calls on one (OS or
 * virtual) thread must not race with each other: that thread's events are in the order
 * its calls are made.
 *
 * Link with -lmartini-interp (pkg-config martini-interp). docs/interpreter-abi.md is the
 * guide, with a Lua host (martini-lua) as the worked example.
 */
#ifndef MARTINI_INTERP_H
#define MARTINI_INTERP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped on any incompatible change; martini_interp_create refuses another. */
#define MARTINI_INTERP_ABI_VERSION 1

#if defined(__GNUC__)
#define MARTINI_INTERP_API __attribute__((visibility("default")))
#else
#define MARTINI_INTERP_API
#endif

typedef struct martini_interp martini_interp;

/* A method id, chosen by the interpreter: any value but 0, unique per method. */
typedef uint64_t martini_method_id;
/* A stack id, chosen by the interpreter: any value but 0, unique among the live frames
 * of one thread (a frame pointer, a depth, a call-info address). */
typedef uint64_t martini_stack_id;
/* The stack id of "no frame": exiting to it unwinds the whole shadow stack. */
#define MARTINI_STACK_BASE ((martini_stack_id)0)
/* A virtual thread's handle, chosen by the interpreter: any value but 0. */
typedef uint64_t martini_vthread;

typedef enum martini_status {
    MARTINI_OK = 0,
    MARTINI_E_NULL = 1,          /* a required pointer was NULL */
    MARTINI_E_ARGUMENT = 2,      /* a value is not allowed: id 0, empty name, unsorted line table */
    MARTINI_E_UNKNOWN_ID = 3,    /* a method or virtual thread that was not registered */
    MARTINI_E_DUPLICATE_ID = 4,  /* an id registered twice with different facts */
    MARTINI_E_PHASE = 5,         /* after martini_interp_shutdown, or a second interpreter */
    MARTINI_E_STACK = 6,         /* an exit to a stack id that is not on the thread's stack */
    MARTINI_E_VERSION = 7,       /* the caller was built against another ABI version */
    MARTINI_E_CLIENTS = 8,       /* create: a bad client list, or no client could be loaded */
    MARTINI_E_INTERNAL = 9       /* out of memory, or a bug: the message says which */
} martini_status;

/* ---- Life cycle ------------------------------------------------------------------ */

typedef struct martini_config {
    uint32_t abi_version;         /* MARTINI_INTERP_ABI_VERSION */
    const char *runtime_name;     /* "Lua"; shown to clients (GetVMInfo) */
    const char *runtime_version;  /* "5.4.4" */
    /* Profiler clients: "cgprof=depth=40;callcount" (docs/client-guide.md): a bundled
     * client's name or a library's path, each with optional =OPTIONS. */
    const char *clients;
    /* ':'-separated directories to look up bundled client names in; NULL: the
     * environment's MARTINI_CLIENT_PATH, then the clients installed with Martini. */
    const char *client_path;
    /* Where clients write their files (EcSetOutputDirectory); NULL: their default. */
    const char *output_dir;
    /* The calling OS thread's name (it becomes the first thread); NULL: "main". */
    const char *main_thread_name;
} martini_config;

/* Loads the clients, lets their filters and registrations settle, and starts the run
 * (VmInit, on the calling thread). A client that fails to load is named on stderr and
 * the others go on; MARTINI_E_CLIENTS only when none could be loaded or the list is
 * malformed. Only one interpreter instance may be live in a process at a time. */
MARTINI_INTERP_API martini_status martini_interp_create(const martini_config *config,
                                                        martini_interp **out);

/* Ends the run (VmShutdown): the clients write their reports. Later event calls give
 * MARTINI_E_PHASE; data requests are refused. Calling it twice is harmless. */
MARTINI_INTERP_API martini_status martini_interp_shutdown(martini_interp *interp);

/* Experiment control from inside the interpreter, as `martini control PID ...` gives
 * it from outside (docs/control.md): `command` is the command's words separated by
 * single spaces, "custom ID DATA" taking the rest of the line as DATA:
 *   "pause", "resume", "pause-thread ID|NAME", "resume-thread ID|NAME",
 *   "sample NAME", "output DIR", "custom ID DATA", "terminate".
 * Each raises its MPI external-control event to the clients before returning (pause:
 * EcStop, sample: EcCustomCommand 1, ...). After "terminate" the clients have written
 * their outputs; the interpreter's later calls are accepted and reach no client.
 * MARTINI_E_ARGUMENT for an unknown command or a bad argument (the message says
 * which), MARTINI_E_PHASE after martini_interp_shutdown. Any thread, not from inside
 * a client's handler. */
MARTINI_INTERP_API martini_status martini_control(martini_interp *interp, const char *command);

/* For a host whose program does not handle SIGTERM, SIGINT and SIGHUP itself: when one
 * of them would end the process, the run ends first (as martini_interp_shutdown: the
 * clients write their outputs), then the signal ends the process as it would have.
 * Signals with a handler of the program's own are left alone. Until
 * martini_interp_destroy. */
MARTINI_INTERP_API martini_status martini_interp_end_on_signals(martini_interp *interp);

/* Shuts down if not done yet, then frees everything. NULL is ignored. */
MARTINI_INTERP_API void martini_interp_destroy(martini_interp *interp);

/* The message of the last error on the calling thread ("" if none): names the
 * function, the cause and the id or value at fault. Valid until the next call. */
MARTINI_INTERP_API const char *martini_last_error(void);

/* A fixed English name for a status ("MARTINI_E_STACK"). */
MARTINI_INTERP_API const char *martini_status_name(martini_status status);

/* ---- Methods --------------------------------------------------------------------- */

/* One line-table row: from code offset `offset` on, the code is on source line `line`.
 * Rows are sorted by offset, strictly increasing. */
typedef struct martini_line {
    uint32_t offset;
    uint32_t line;
} martini_line;

/* Method flags (the MPI access type the filters see). */
#define MARTINI_METHOD_PUBLIC 0u   /* the default: part of its class's interface */
#define MARTINI_METHOD_INTERNAL 1u /* visible inside its module or file only */
#define MARTINI_METHOD_PRIVATE 2u  /* private to its class */
#define MARTINI_METHOD_NATIVE 4u   /* implemented in C (a builtin), not interpreted */

typedef struct martini_method_info {
    const char *name;         /* required: "insert" */
    const char *class_name;   /* the class, module or file it belongs to; NULL: "(global)" */
    const char *signature;    /* optional: "(key, value)" */
    const char *source_file;  /* optional: "lib/tree.lua" */
    uint32_t flags;           /* MARTINI_METHOD_* */
    const martini_line *lines; /* optional line table, line_count rows */
    size_t line_count;
} martini_method_info;

/* Registers a method (ClassLoad for its class the first time, then NewMethod) and asks
 * the clients' filters about it, once. Registering the same id again with the same
 * name and class is accepted and changes nothing. */
MARTINI_INTERP_API martini_status martini_method_register(martini_interp *interp,
                                                          martini_method_id method,
                                                          const martini_method_info *info);

/* 1 when some client wants the method's calls, 0 when none does (or the id is
 * unknown). An interpreter may skip martini_enter/exit for unwanted methods, but need
 * not: their calls are tracked for unwinding and cost no event. */
MARTINI_INTERP_API int martini_method_wanted(martini_interp *interp, martini_method_id method);

/* ---- Calls ----------------------------------------------------------------------- */

/* A call of `method` on the calling OS thread, in a new frame `stack`. If `stack` is
 * already on the thread's shadow stack, the frames from it up were left without an
 * exit (a tail call, an exception) and are unwound first. */
MARTINI_INTERP_API martini_status martini_enter(martini_interp *interp, martini_method_id method,
                                                martini_stack_id stack);

/* A return on the calling OS thread to the frame `returned_to` (MARTINI_STACK_BASE:
 * out of the outermost frame). Every frame above it exits, innermost first. */
MARTINI_INTERP_API martini_status martini_exit(martini_interp *interp, martini_stack_id returned_to);

/* The same on a virtual thread. */
MARTINI_INTERP_API martini_status martini_enter_vt(martini_interp *interp, martini_vthread thread,
                                                   martini_method_id method, martini_stack_id stack);
MARTINI_INTERP_API martini_status martini_exit_vt(martini_interp *interp, martini_vthread thread,
                                                  martini_stack_id returned_to);

/* ---- Threads --------------------------------------------------------------------- */

/* Names the calling OS thread and announces it (ThreadStart). An OS thread that calls
 * martini_enter without it is announced then, as "thread-N". */
MARTINI_INTERP_API martini_status martini_thread_start(martini_interp *interp, const char *name);
/* The calling OS thread ends (ThreadEnd); its open frames exit first. */
MARTINI_INTERP_API martini_status martini_thread_end(martini_interp *interp);

/* A virtual thread starts, with a name (NULL: "vthread-N") and the virtual thread that
 * made it (0: the calling OS thread). */
MARTINI_INTERP_API martini_status martini_thread_start_vt(martini_interp *interp, martini_vthread thread,
                                                          const char *name, martini_vthread parent);
MARTINI_INTERP_API martini_status martini_thread_end_vt(martini_interp *interp, martini_vthread thread);
/* Renames a thread (0: the calling OS thread). */
MARTINI_INTERP_API martini_status martini_thread_set_name_vt(martini_interp *interp, martini_vthread thread,
                                                             const char *name);

/* ---- What the clients want ------------------------------------------------------ */

#define MARTINI_WANTS_CALLS 1u    /* some client observes MethodEnter or MethodLeave */
#define MARTINI_WANTS_COVERAGE 2u /* some client asked for block counts (coverage) */

/* 1 when the clients want `what` (one MARTINI_WANTS_* value), 0 otherwise. Settled
 * once martini_interp_create returns: a host chooses its hooks from it (a Lua host sets
 * its line hook only when coverage is wanted, and needs no call events when calls are
 * not). */
MARTINI_INTERP_API int martini_wants(martini_interp *interp, unsigned what);

/* ---- Coverage: basic-block counts and times (QII's qprof_record_bb_*) ------------ *
 *
 * A block is named by the offset of a row of its method's line table (QII's "basic
 * block number"); a method without a line table is one block, offset 0. Counts are
 * kept inside Martini, never one event per block: clients read them when they write
 * their reports (GetCoverageInfo). A Lua host registers each function with one row per
 * line that has code (offset = line) and counts a line each time its line hook runs. */

/* 1 when some client covers the method (its blocks are counted), 0 otherwise. */
MARTINI_INTERP_API int martini_method_covered(martini_interp *interp, martini_method_id method);

/* The covered method's counters, one per line-table row in row order (one for a method
 * without a line table), for the interpreter to increment in place: the cheapest way to
 * count. A single OS thread running the method may write `counters[i] += 1` with a
 * relaxed atomic store (__atomic_store_n(&c[i], c[i] + 1, __ATOMIC_RELAXED)); several
 * need an atomic add. Martini reads them with atomic loads when a client asks. Valid
 * until martini_interp_destroy. MARTINI_E_ARGUMENT when no client covers the method. */
MARTINI_INTERP_API martini_status martini_coverage_counters(martini_interp *interp, martini_method_id method,
                                                            uint64_t **counters, size_t *count);

/* `count` more executions of the block at `offset` of `method` (an atomic add; any
 * thread). Nothing is counted, and MARTINI_OK returned, when no client covers it. */
MARTINI_INTERP_API martini_status martini_bb_count(martini_interp *interp, martini_method_id method,
                                                   uint32_t offset, uint64_t count);

/* The block at `offset` of the calling thread's innermost frame's method starts now:
 * the time until the thread's next martini_bb_time, or until that frame exits, is the
 * block's (calls made inside it included). Measured with Martini's clock; kept only
 * when a client asked for block times (DR_COVERAGE_TIME). */
MARTINI_INTERP_API martini_status martini_bb_time(martini_interp *interp, uint32_t offset);
MARTINI_INTERP_API martini_status martini_bb_time_vt(martini_interp *interp, martini_vthread thread,
                                                     uint32_t offset);

/* ---- Code generated at run time -------------------------------------------------- */

/* Machine code for a registered method now lives at [address, address + size)
 * (JittedMethodLoaded); `lines` maps offsets in that code to source lines (optional). */
MARTINI_INTERP_API martini_status martini_code_load(martini_interp *interp, martini_method_id method,
                                                    const void *address, size_t size,
                                                    const martini_line *lines, size_t line_count);
/* That code is gone (JittedMethodUnloaded). */
MARTINI_INTERP_API martini_status martini_code_unload(martini_interp *interp, const void *address);

#ifdef __cplusplus
}
#endif

#endif /* MARTINI_INTERP_H */
