// Martini Profiling Interface: basic types, result codes, data-item masks.
//
// Part of the client API (headers only). Names follow the MPI 2.0 document exactly
// (TId, BitSet, TResult, MRTE_*, DR_*, EG_*, MAT_*) because client writers expect them.
#pragma once

#include <cstddef>
#include <cstdint>

// MPI API version. A client records the version it was compiled against (see
// MPICL_MpiVersion in MpiAPI.h); Martini refuses a client whose major version differs,
// or whose minor version is newer than its own (it may call IMpi methods this Martini
// lacks), and names both versions. Minor versions only append (new events, new data
// items, new IMpi methods at the end of the vtable).
#define MARTINI_MPI_VERSION_MAJOR 2
#define MARTINI_MPI_VERSION_MINOR 6
#define MARTINI_MPI_VERSION ((MARTINI_MPI_VERSION_MAJOR << 16) | MARTINI_MPI_VERSION_MINOR)

// Marks a function a client library exports to Martini (MPICL_Instantiate).
#ifndef API_EXPORT
#define API_EXPORT __attribute__((visibility("default")))
#endif

namespace Martini {
namespace MPI {

// Identifier of a client, module, class, method, thread or object. 0 is never a
// valid id. Ids are stable for the life of the runtime.
typedef std::uint64_t TId;

// A set of data items (DR_* values OR'ed together).
typedef std::uint64_t BitSet;

// An unsigned integer wide enough for a code address.
typedef std::uintptr_t UIOP;

// Result of every IMpi function.
enum TResult {
    MRTE_RESULT_OK = 0,           // done; every requested item is valid
    MRTE_RESULT_FALSE,            // done; the answer is "no" (e.g. nothing to report)
    MRTE_ERROR_FAIL,              // failed for a reason not listed below
    MRTE_ERROR_NULL_PTR,          // a required pointer (pData, or a requested buffer) is NULL
    MRTE_ERROR_ILLEGAL_ID,        // clientId, or the element id, is not a valid id
    MRTE_ERROR_NOT_SUPPORTED,     // the event, data item or request is not supported
    MRTE_ERROR_PHASE_FAILURE,     // not allowed in the current phase (see each function)
    MRTE_ERROR_PARTIAL_INFO,      // some requested items could not be given: see validData
    MRTE_ERROR_BUFFER_TOO_SHORT,  // an array or string did not fit: see uiActualSize / size
    MRTE_ERROR_ILLEGAL_ARGUMENT,  // an argument is out of its documented range
    MRTE_ERROR_OUT_OF_MEMORY,     // Martini could not allocate what the call needed
};

// A short, stable name for a result code ("MRTE_ERROR_PARTIAL_INFO").
inline const char *ResultName(TResult r) {
    switch (r) {
        case MRTE_RESULT_OK: return "MRTE_RESULT_OK";
        case MRTE_RESULT_FALSE: return "MRTE_RESULT_FALSE";
        case MRTE_ERROR_FAIL: return "MRTE_ERROR_FAIL";
        case MRTE_ERROR_NULL_PTR: return "MRTE_ERROR_NULL_PTR";
        case MRTE_ERROR_ILLEGAL_ID: return "MRTE_ERROR_ILLEGAL_ID";
        case MRTE_ERROR_NOT_SUPPORTED: return "MRTE_ERROR_NOT_SUPPORTED";
        case MRTE_ERROR_PHASE_FAILURE: return "MRTE_ERROR_PHASE_FAILURE";
        case MRTE_ERROR_PARTIAL_INFO: return "MRTE_ERROR_PARTIAL_INFO";
        case MRTE_ERROR_BUFFER_TOO_SHORT: return "MRTE_ERROR_BUFFER_TOO_SHORT";
        case MRTE_ERROR_ILLEGAL_ARGUMENT: return "MRTE_ERROR_ILLEGAL_ARGUMENT";
        case MRTE_ERROR_OUT_OF_MEMORY: return "MRTE_ERROR_OUT_OF_MEMORY";
    }
    return "MRTE_(unknown)";
}

// ---------------------------------------------------------------------------------
// Data items (TDataRequestType). Used both in IEventObserver::EventDataTypes() (what
// an event should carry) and in the data requests (what to retrieve). Each event and
// each request documents which items it supports; validData reports which were given.
// Values are append-only.
typedef BitSet TDataRequestType;

const BitSet DR_NONE = 0;

// Columns: X(DR_CONSTANT, bit). The bit is part of the ABI: append-only, never
// changed or reused (checked below; mpi-abi-snapshot holds them as released).
#define MARTINI_MPI_DATA_ITEMS(X)                                                                  \
    X(DR_METHOD_ID, 0)                                                                             \
    X(DR_METHOD_NAME, 1)                                                                           \
    X(DR_METHOD_SIGNATURE, 2)                                                                      \
    X(DR_METHOD_LINE_NUMBERS, 3)                /* offset -> line table */                         \
    X(DR_METHOD_ACCESS_TYPE, 4)                 /* EMethodAccessType */                            \
    X(DR_CLASS_ID, 5)                                                                              \
    X(DR_CLASS_NAME, 6)                         /* source form: java.util.HashMap$Node */          \
    X(DR_SOURCE_FILE_NAME, 7)                                                                      \
    X(DR_MODULE_ID, 8)                                                                             \
    X(DR_MODULE_NAME, 9)                                                                           \
    X(DR_THREAD_ID, 10)                                                                            \
    X(DR_THREAD_NAME, 11)                                                                          \
    X(DR_THREAD_GROUP, 12)                                                                         \
    X(DR_THREAD_PARENT_ID, 13)                  /* the thread that started it */                   \
    X(DR_THREAD_STATE, 14)                      /* EThreadState */                                 \
    X(DR_VM_CALL_STACK, 15)                     /* managed frames, innermost first */              \
    X(DR_OBJECT_ID, 16)                                                                            \
    X(DR_OBJECT_SIZE, 17)                       /* bytes */                                        \
    X(DR_ARRAY_INFO, 18)                        /* SArrayInfo */                                   \
    X(DR_CPU_TIMESTAMP, 19)                     /* monotonic wall clock, ns */                     \
    X(DR_THREAD_CPU_TIME, 20)                   /* CPU time of the thread, ns */                   \
    X(DR_METHOD_CODE, 21)                       /* native code address and size */                 \
    X(DR_CLASS_METHODS, 22)                     /* ids of the class's methods */                   \
    X(DR_MONITOR_OWNER_THREAD_ID, 23)           /* holder of a contended monitor */                \
    X(DR_MONITOR_TIMEOUT, 24)                   /* wait timeout (ms) / timed out */                \
    X(DR_OBJECT_REFERENCES, 25)                 /* objects an object refers to */                  \
    X(DR_INTERACTION_TYPE, 26)                  /* EThreadInteractionType */                       \
    X(DR_ALLOC_LOCATION, 27)                    /* allocating method and offset */                 \
    X(DR_CODE_NAME, 28)                         /* name of generated code */                       \
    X(DR_COMMAND, 29)                           /* external-control payload */                     \
    X(DR_MOVED_REFERENCES, 30)                  /* old -> new object ids */                        \
    X(DR_LINE_NUMBER, 31)                       /* source line of a location */                    \
    X(DR_COVERAGE_BLOCKS, 32)                   /* per block: offset, line, count */               \
    X(DR_COVERAGE_BRANCHES, 33)                 /* per branch outcome: offset, outcome, count */   \
    X(DR_COVERAGE_TIME, 34)                     /* per block: time spent in it, ns */               \
    X(DR_COVERAGE_CALLS, 35)                    /* per method: its calls (CEK_ENTRY) alone */

#define MARTINI_MPI_X_ITEM(Name, Bit) const BitSet Name = BitSet(1) << Bit;
MARTINI_MPI_DATA_ITEMS(MARTINI_MPI_X_ITEM)
#undef MARTINI_MPI_X_ITEM

namespace detail {
constexpr bool DataItemBitsAreUnique() {
    BitSet seen = 0;
#define MARTINI_MPI_X_ITEM(Name, Bit)                               \
    if (Bit >= 64 || (seen & (BitSet(1) << Bit))) return false; \
    seen |= BitSet(1) << Bit;
    MARTINI_MPI_DATA_ITEMS(MARTINI_MPI_X_ITEM)
#undef MARTINI_MPI_X_ITEM
    return true;
}
static_assert(DataItemBitsAreUnique(), "MARTINI_MPI_DATA_ITEMS: every item needs its own bit below 64 (append-only)");
}  // namespace detail

// ---------------------------------------------------------------------------------
// Event groups: events that are filtered, enabled and disabled together.
enum EEventGroup {
    EG_NONE = 0,
    EG_CALL_GRAPH,          // MethodEnter, MethodLeave
    EG_HEAP,                // ObjectAlloc, ObjectFree, GcStart, GcEnd, GcMovedReferences
    EG_MONITOR,             // MonitorWait, MonitorWaited, ContendedMonitorEnter(ed)
    EG_THREAD_INTERACTION,  // ThreadInteraction
    EG_COVERAGE,            // no events: the methods whose blocks are counted (IMpi::RequestCoverage)
    EG_LAST
};
typedef EEventGroup TEventGroup;

// Access of a method as seen from outside its package/assembly (call-graph filters).
enum EMethodAccessType {
    MAT_NONE = 0,
    MAT_PACKAGE_API,       // public method of a public class
    MAT_PACKAGE_INTERNAL,  // visible inside the package only (package-private, internal)
    MAT_CLASS_INTERNAL,    // private to the class
};

enum EThreadState {
    TS_UNKNOWN = 0,
    TS_NEW,
    TS_RUNNING,
    TS_BLOCKED,        // waiting to enter a monitor
    TS_WAITING,        // Object.wait / join / park without timeout
    TS_TIMED_WAITING,  // sleep, wait or park with a timeout
    TS_SUSPENDED,
    TS_TERMINATED,
};

enum EThreadInteractionType {
    IT_NONE = 0,
    IT_NOTIFY,
    IT_NOTIFY_ALL,
    IT_START,
    IT_JOIN,
    IT_SLEEP,
    IT_INTERRUPT,
};

enum EObjectArrayType {
    OAT_NONE = 0,  // not an array
    OAT_OBJECT,
    OAT_BOOLEAN,
    OAT_BYTE,
    OAT_CHAR,
    OAT_SHORT,
    OAT_INT,
    OAT_LONG,
    OAT_FLOAT,
    OAT_DOUBLE,
};

// ---------------------------------------------------------------------------------
// MPI arrays. In an event, Martini allocates the entries and they are valid until
// HandleEvent returns. In a data request the client allocates `entries` with room for
// `uiSize` elements; Martini writes min(uiSize, needed) of them and always sets
// uiActualSize to the number available. uiActualSize > uiSize means the call returned
// MRTE_ERROR_BUFFER_TOO_SHORT: allocate uiActualSize entries and ask again.
template <typename TArrayElement>
struct SArray {
    TArrayElement *entries = nullptr;
    unsigned int uiSize = 0;
    unsigned int uiActualSize = 0;
};

struct SLineNumberTableEntry {
    unsigned int uiOffset;      // code offset (bytecode index, IL offset, ...)
    unsigned int uiLineNumber;  // source line of the code from uiOffset on
};
typedef SArray<SLineNumberTableEntry> SLineNumberTable;

struct SStackEntry {
    TId methodId;
    unsigned int uiLocation;    // code offset inside the method, ~0u when unknown
    unsigned int uiLineNumber;  // source line, 0 when unknown
};
typedef SArray<SStackEntry> SStackTrace;  // innermost frame first

typedef SArray<TId> SIdArray;

// Coverage (IMpi::GetCoverageInfo). A block is a run of code entered only at its start;
// a branch outcome is one way out of a conditional instruction.
enum ECoverageEntryKind {
    CEK_BLOCK = 0,
    CEK_BRANCH,
    CEK_ENTRY,  // the method's entries (its calls), where the runtime counts them apart from
                // its first block (which a loop may enter again); with DR_COVERAGE_BLOCKS
};

struct SCoverageEntry {
    ECoverageEntryKind kind;
    unsigned int uiOffset;      // CEK_BLOCK: where the block starts; CEK_BRANCH: the
                                // offset of the branching instruction (bytecode index,
                                // IL offset, an interpreter's block number)
    unsigned int uiLineNumber;  // source line at uiOffset; 0 when the method has no line table
    unsigned int uiOutcome;     // CEK_BRANCH: 0 not taken (falls through), 1 taken; a switch:
                                // 0 the default, k the k-th other target (cases that share
                                // a target are one outcome). CEK_BLOCK: 0
    std::uint64_t uiCount;      // times the block was entered / the outcome was taken
    std::uint64_t uiTimeNs;     // DR_COVERAGE_TIME: time spent in the block; 0 otherwise
};
typedef SArray<SCoverageEntry> SCoverageEntryArray;

struct SMovedReference {
    TId oldObjectId;
    TId newObjectId;
};
typedef SArray<SMovedReference> SMovedReferenceArray;

struct SArrayInfo {
    EObjectArrayType arrayType = OAT_NONE;
    unsigned int uiNumElements = 0;
};

// Size assumed for a data-request string buffer whose size member is left at 0, as
// MPI 2.0 clients (which had no size members) do: the MPI document's examples
// allocate char[1000]. Set the size member to be safe with smaller buffers.
const unsigned int MPI_LEGACY_STRING_BUFFER_SIZE = 1000;

}  // namespace MPI
}  // namespace Martini
