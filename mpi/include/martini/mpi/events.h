// Martini Profiling Interface: the event catalog, event data and observers.
//
// MARTINI_MPI_EVENTS is the one list of events. Everything else (TEventType, the
// observer interfaces, the core's dispatch tables and registration checks, the replay
// format's event names, the documentation table) is generated from it. Adding an
// event is one line here, one data struct below, plus the provider work.
//
// Columns: X(Name, EV_CONSTANT, number, group, supported data items, shape)
//   Name    -> I<Name>EventObserver and S<Name>EventData
//   number  -> the TEventType value, part of the ABI: clients already built carry it.
//              Append-only: a new event takes the next unused number wherever its row
//              goes; a number is never changed or reused. A compile-time check below
//              refuses duplicates, and mpi-abi-snapshot (mpi/tests/) holds every
//              number as released.
//   shape   -> DATA: HandleEvent(S<Name>EventData &data); NODATA: HandleEvent()
#pragma once

#include "martini/mpi/base.h"

namespace Martini {
namespace MPI {

#define MARTINI_MPI_EVENTS(X)                                                                      \
    /* lifecycle */                                                                                \
    X(VmInit, EV_VM_INIT, 1, EG_NONE, DR_THREAD_ID, DATA)                                          \
    X(VmShutdown, EV_VM_SHUTDOWN, 2, EG_NONE, DR_NONE, NODATA)                                     \
    /* code */                                                                                     \
    X(ModuleLoad, EV_MODULE_LOAD, 3, EG_NONE, DR_MODULE_ID | DR_MODULE_NAME, DATA)                 \
    X(ModuleUnload, EV_MODULE_UNLOAD, 4, EG_NONE, DR_MODULE_ID | DR_MODULE_NAME, DATA)             \
    X(ClassLoad, EV_CLASS_LOAD, 5, EG_NONE,                                                        \
      DR_CLASS_ID | DR_CLASS_NAME | DR_SOURCE_FILE_NAME | DR_MODULE_ID | DR_THREAD_ID, DATA)       \
    X(NewMethod, EV_NEW_METHOD, 6, EG_NONE,                                                        \
      DR_METHOD_ID | DR_METHOD_NAME | DR_METHOD_SIGNATURE | DR_METHOD_ACCESS_TYPE |                \
          DR_CLASS_ID | DR_CLASS_NAME | DR_SOURCE_FILE_NAME | DR_MODULE_ID |                       \
          DR_METHOD_LINE_NUMBERS,                                                                  \
      DATA)                                                                                        \
    X(JittedMethodLoaded, EV_JITTED_METHOD_LOADED, 7, EG_NONE,                                     \
      DR_METHOD_ID | DR_METHOD_CODE, DATA)                                                         \
    X(JittedMethodUnloaded, EV_JITTED_METHOD_UNLOADED, 8, EG_NONE,                                 \
      DR_METHOD_ID | DR_METHOD_CODE, DATA)                                                         \
    X(DynamicCodeGenerated, EV_DYNAMIC_CODE_GENERATED, 9, EG_NONE,                                 \
      DR_CODE_NAME | DR_METHOD_CODE, DATA)                                                         \
    /* call graph */                                                                               \
    X(MethodEnter, EV_METHOD_ENTER, 10, EG_CALL_GRAPH,                                             \
      DR_METHOD_ID | DR_THREAD_ID | DR_CPU_TIMESTAMP | DR_THREAD_CPU_TIME, DATA)                   \
    X(MethodLeave, EV_METHOD_LEAVE, 11, EG_CALL_GRAPH,                                             \
      DR_METHOD_ID | DR_THREAD_ID | DR_CPU_TIMESTAMP | DR_THREAD_CPU_TIME, DATA)                   \
    /* threads */                                                                                  \
    X(ThreadStart, EV_THREAD_START, 12, EG_NONE,                                                   \
      DR_THREAD_ID | DR_THREAD_NAME | DR_THREAD_GROUP | DR_THREAD_PARENT_ID | DR_OBJECT_ID |       \
          DR_CPU_TIMESTAMP,                                                                        \
      DATA)                                                                                        \
    X(ThreadEnd, EV_THREAD_END, 13, EG_NONE, DR_THREAD_ID | DR_CPU_TIMESTAMP, DATA)                \
    /* heap */                                                                                     \
    X(ObjectAlloc, EV_OBJECT_ALLOC, 14, EG_HEAP,                                                   \
      DR_THREAD_ID | DR_OBJECT_ID | DR_CLASS_ID | DR_OBJECT_SIZE | DR_ARRAY_INFO |                 \
          DR_ALLOC_LOCATION | DR_VM_CALL_STACK | DR_CPU_TIMESTAMP,                                 \
      DATA)                                                                                        \
    X(ObjectFree, EV_OBJECT_FREE, 15, EG_HEAP, DR_OBJECT_ID | DR_CLASS_ID | DR_OBJECT_SIZE, DATA)  \
    X(GcStart, EV_GC_START, 16, EG_HEAP, DR_CPU_TIMESTAMP, DATA)                                   \
    X(GcEnd, EV_GC_END, 17, EG_HEAP, DR_CPU_TIMESTAMP, DATA)                                       \
    X(GcMovedReferences, EV_GC_MOVED_REFERENCES, 18, EG_HEAP, DR_MOVED_REFERENCES, DATA)           \
    /* monitors */                                                                                 \
    X(MonitorWait, EV_MONITOR_WAIT, 19, EG_MONITOR,                                                \
      DR_THREAD_ID | DR_OBJECT_ID | DR_CLASS_ID | DR_MONITOR_TIMEOUT | DR_CPU_TIMESTAMP, DATA)     \
    X(MonitorWaited, EV_MONITOR_WAITED, 20, EG_MONITOR,                                            \
      DR_THREAD_ID | DR_OBJECT_ID | DR_CLASS_ID | DR_MONITOR_TIMEOUT | DR_CPU_TIMESTAMP, DATA)     \
    X(ContendedMonitorEnter, EV_CONTENDED_MONITOR_ENTER, 21, EG_MONITOR,                           \
      DR_THREAD_ID | DR_OBJECT_ID | DR_CLASS_ID | DR_MONITOR_OWNER_THREAD_ID |                     \
          DR_CPU_TIMESTAMP,                                                                        \
      DATA)                                                                                        \
    X(ContendedMonitorEntered, EV_CONTENDED_MONITOR_ENTERED, 22, EG_MONITOR,                       \
      DR_THREAD_ID | DR_OBJECT_ID | DR_CLASS_ID | DR_CPU_TIMESTAMP, DATA)                          \
    /* thread interaction */                                                                       \
    X(ThreadInteraction, EV_THREAD_INTERACTION, 23, EG_THREAD_INTERACTION,                         \
      DR_THREAD_ID | DR_OBJECT_ID | DR_CLASS_ID | DR_INTERACTION_TYPE | DR_CPU_TIMESTAMP,          \
      DATA)                                                                                        \
    /* external control */                                                                         \
    X(EcStart, EV_EC_START, 24, EG_NONE, DR_NONE, NODATA)                                          \
    X(EcStop, EV_EC_STOP, 25, EG_NONE, DR_NONE, NODATA)                                            \
    X(EcSetOutputDirectory, EV_EC_SET_OUTPUT_DIRECTORY, 26, EG_NONE, DR_COMMAND, DATA)             \
    X(EcCustomCommand, EV_EC_CUSTOM_COMMAND, 27, EG_NONE, DR_COMMAND, DATA)                        \
    X(EcAttach, EV_EC_ATTACH, 28, EG_NONE, DR_NONE, NODATA)                                        \
    X(EcDetach, EV_EC_DETACH, 29, EG_NONE, DR_NONE, NODATA)                                        \
    /* sampling */                                                                                 \
    X(SampleHit, EV_SAMPLE_HIT, 30, EG_NONE, DR_THREAD_ID | DR_VM_CALL_STACK | DR_CPU_TIMESTAMP,   \
      DATA)

namespace detail {
inline constexpr int kEventNumbers[] = {
#define MARTINI_MPI_X_NUMBER(Name, Const, Number, Group, Items, Shape) Number,
    MARTINI_MPI_EVENTS(MARTINI_MPI_X_NUMBER)
#undef MARTINI_MPI_X_NUMBER
};
constexpr int LastEventNumber() {
    int last = 0;
    for (int n : kEventNumbers) last = n > last ? n : last;
    return last;
}
constexpr bool EventNumbersAreUniqueAndPositive() {
    for (int i = 0; i < int(sizeof kEventNumbers / sizeof kEventNumbers[0]); ++i) {
        if (kEventNumbers[i] <= 0) return false;
        for (int j = 0; j < i; ++j) {
            if (kEventNumbers[i] == kEventNumbers[j]) return false;
        }
    }
    return true;
}
static_assert(EventNumbersAreUniqueAndPositive(),
              "MARTINI_MPI_EVENTS: every event needs its own number > 0 (append-only: take the next unused one)");
}  // namespace detail

enum TEventType {
    EV_NONE = 0,
#define MARTINI_MPI_X_ENUM(Name, Const, Number, Group, Items, Shape) Const = Number,
    MARTINI_MPI_EVENTS(MARTINI_MPI_X_ENUM)
#undef MARTINI_MPI_X_ENUM
    EV_LAST = detail::LastEventNumber() + 1  // bound for tables indexed by TEventType
};

// ---------------------------------------------------------------------------------
// Event data. Each struct is filled by Martini before HandleEvent; `validData` says
// which members hold values (the items the observer asked for in EventDataTypes()
// that the runtime could give). Strings and arrays belong to Martini and are valid
// until HandleEvent returns: copy what you keep. Treat the data as read-only.

struct SVmInitEventData {
    BitSet validData = DR_NONE;
    TId threadId = 0;  // the thread that initialized the VM
};

struct SModuleLoadEventData {
    BitSet validData = DR_NONE;
    TId moduleId = 0;
    const char *szModuleName = nullptr;  // jar/class-path entry, assembly, script file
};

struct SModuleUnloadEventData {
    BitSet validData = DR_NONE;
    TId moduleId = 0;
    const char *szModuleName = nullptr;
};

struct SClassLoadEventData {
    BitSet validData = DR_NONE;
    TId classId = 0;
    const char *szClassName = nullptr;       // source form: java.util.HashMap$Node
    const char *szSourceFileName = nullptr;
    TId moduleId = 0;
    TId threadId = 0;                        // the loading thread
};

struct SNewMethodEventData {
    BitSet validData = DR_NONE;
    TId methodId = 0;
    const char *szMethodName = nullptr;
    const char *szMethodSig = nullptr;       // runtime's own form, e.g. JVM "(I)V"
    EMethodAccessType methodAccessType = MAT_NONE;
    TId classId = 0;
    const char *szClassName = nullptr;
    const char *szSourceFileName = nullptr;
    TId moduleId = 0;
    SLineNumberTable lineNumbers;            // sorted by uiOffset
};

struct SJittedMethodLoadedEventData {
    BitSet validData = DR_NONE;
    TId methodId = 0;
    UIOP uiCodeAddress = 0;
    unsigned int uiCodeSize = 0;
};

struct SJittedMethodUnloadedEventData {
    BitSet validData = DR_NONE;
    TId methodId = 0;
    UIOP uiCodeAddress = 0;
    unsigned int uiCodeSize = 0;
};

struct SDynamicCodeGeneratedEventData {
    BitSet validData = DR_NONE;
    const char *szCodeName = nullptr;  // e.g. "Interpreter", "I2C/C2I adapters"
    UIOP uiCodeAddress = 0;
    unsigned int uiCodeSize = 0;
};

struct SMethodEnterEventData {
    BitSet validData = DR_NONE;
    TId methodId = 0;
    TId threadId = 0;
    std::uint64_t uiCpuTimestamp = 0;   // DR_CPU_TIMESTAMP, ns
    std::uint64_t uiThreadCpuTime = 0;  // DR_THREAD_CPU_TIME, ns
};

struct SMethodLeaveEventData {
    BitSet validData = DR_NONE;
    TId methodId = 0;
    TId threadId = 0;
    std::uint64_t uiCpuTimestamp = 0;
    std::uint64_t uiThreadCpuTime = 0;
    // Always valid: true when the method ended by throwing (the leave still pairs
    // with its enter, in order, on its thread).
    bool bIsExceptionExit = false;
};

struct SThreadStartEventData {
    BitSet validData = DR_NONE;
    TId threadId = 0;
    const char *szThreadName = nullptr;
    const char *szThreadGroupName = nullptr;
    TId parentThreadId = 0;  // DR_THREAD_PARENT_ID
    TId threadObjectId = 0;  // DR_OBJECT_ID: the runtime's thread object
    std::uint64_t uiCpuTimestamp = 0;
};

struct SThreadEndEventData {
    BitSet validData = DR_NONE;
    TId threadId = 0;
    std::uint64_t uiCpuTimestamp = 0;
};

struct SObjectAllocEventData {
    BitSet validData = DR_NONE;
    TId threadId = 0;
    TId objectId = 0;
    TId classId = 0;
    std::uint64_t uiObjectSize = 0;  // DR_OBJECT_SIZE, bytes
    SArrayInfo arrayInfo;            // DR_ARRAY_INFO
    TId allocMethodId = 0;           // DR_ALLOC_LOCATION: method and offset of the site
    unsigned int uiAllocLocation = 0;
    SStackTrace stackTrace;          // DR_VM_CALL_STACK
    std::uint64_t uiCpuTimestamp = 0;
};

struct SObjectFreeEventData {
    BitSet validData = DR_NONE;
    TId objectId = 0;
    TId classId = 0;
    std::uint64_t uiObjectSize = 0;
};

struct SGcStartEventData {
    BitSet validData = DR_NONE;
    std::uint64_t uiCpuTimestamp = 0;
};

struct SGcEndEventData {
    BitSet validData = DR_NONE;
    std::uint64_t uiCpuTimestamp = 0;
};

struct SGcMovedReferencesEventData {
    BitSet validData = DR_NONE;
    SMovedReferenceArray movedReferences;
};

struct SMonitorWaitEventData {
    BitSet validData = DR_NONE;
    TId threadId = 0;
    TId objectId = 0;  // the monitor's object
    TId classId = 0;   // class of the monitor's object
    std::int64_t timeoutMs = 0;  // DR_MONITOR_TIMEOUT; 0 = no timeout
    std::uint64_t uiCpuTimestamp = 0;
};

struct SMonitorWaitedEventData {
    BitSet validData = DR_NONE;
    TId threadId = 0;
    TId objectId = 0;
    TId classId = 0;
    bool bTimedOut = false;  // DR_MONITOR_TIMEOUT
    std::uint64_t uiCpuTimestamp = 0;
};

struct SContendedMonitorEnterEventData {
    BitSet validData = DR_NONE;
    TId threadId = 0;
    TId objectId = 0;
    TId classId = 0;
    TId ownerThreadId = 0;  // DR_MONITOR_OWNER_THREAD_ID: holder when the wait began
    std::uint64_t uiCpuTimestamp = 0;
};

struct SContendedMonitorEnteredEventData {
    BitSet validData = DR_NONE;
    TId threadId = 0;
    TId objectId = 0;
    TId classId = 0;
    std::uint64_t uiCpuTimestamp = 0;
};

struct SThreadInteractionEventData {
    BitSet validData = DR_NONE;
    TId threadId = 0;
    TId objectId = 0;  // notified monitor, started/joined thread object
    TId classId = 0;
    EThreadInteractionType interactionType = IT_NONE;
    std::uint64_t uiCpuTimestamp = 0;
};

struct SEcSetOutputDirectoryEventData {
    BitSet validData = DR_NONE;
    const char *szDirectoryName = nullptr;
};

struct SEcCustomCommandEventData {
    BitSet validData = DR_NONE;
    unsigned int uiCommandId = 0;
    const char *szCommandData = nullptr;  // may be empty, never NULL when valid
};

// The EcCustomCommand ids Martini raises itself, for the collector API's experiment
// controls that have no MPI event of their own (docs/control.md). Commands passed
// through from `martini control PID custom ID DATA` have ids from CC_USER up.
enum EControlCommand : unsigned int {
    CC_SAMPLE = 1,         // a named sample point: write what you have so far, labelled
                           // szCommandData, and go on collecting
    CC_THREAD_PAUSE = 2,   // szCommandData: a thread id (decimal); record nothing of it
    CC_THREAD_RESUME = 3,  // szCommandData: a thread id (decimal); record it again
    CC_INTERVAL = 4,       // an interval point (since MPI 2.5): write what was collected
                           // since the previous interval point (or the start), labelled
                           // szCommandData, and collect the next interval afresh
    CC_USER = 256,         // the first id of commands for clients' own use
};

struct SSampleHitEventData {
    BitSet validData = DR_NONE;
    TId threadId = 0;
    SStackTrace stackTrace;
    std::uint64_t uiCpuTimestamp = 0;
};

// ---------------------------------------------------------------------------------
// Observers. Register one with IMpi::RegisterEvent during MPICL_Instantiate.
//
// Threading: HandleEvent is called on the runtime thread that raised the event, so it
// may run on several threads at once; it must be thread-safe. An event raised on a
// thread while that thread is inside any Martini handler is not delivered (counted
// instead), so a handler may call the data requests and run managed code freely.
// A handler that throws is contained: the event still reaches the other clients.

class IEventObserver {
public:
    virtual ~IEventObserver() {}
    // The event this observer handles. Implemented by each I<Name>EventObserver.
    virtual TEventType Type() = 0;
    // The data items the event should carry for this observer. Called once, during
    // registration. Default: every item the event supports.
    virtual BitSet EventDataTypes() = 0;
};

// Events in the DATA shape.
#define MARTINI_MPI_X_OBSERVER_DATA(Name, Const, Items)                 \
    class I##Name##EventObserver : public IEventObserver {              \
    public:                                                             \
        static constexpr TEventType kEventType = Const;                    \
        static constexpr BitSet kSupportedData = Items;                    \
        typedef S##Name##EventData TEventData;                          \
        TEventType Type() final { return Const; }                       \
        virtual BitSet EventDataTypes() { return Items; }               \
        virtual void HandleEvent(S##Name##EventData &data) = 0;         \
    };
// Events in the NODATA shape.
#define MARTINI_MPI_X_OBSERVER_NODATA(Name, Const, Items)               \
    class I##Name##EventObserver : public IEventObserver {              \
    public:                                                             \
        static constexpr TEventType kEventType = Const;                    \
        static constexpr BitSet kSupportedData = Items;                    \
        typedef void TEventData;                                        \
        TEventType Type() final { return Const; }                       \
        virtual BitSet EventDataTypes() { return Items; }               \
        virtual void HandleEvent() = 0;                                 \
    };
#define MARTINI_MPI_X_OBSERVER(Name, Const, Number, Group, Items, Shape) \
    MARTINI_MPI_X_OBSERVER_##Shape(Name, Const, Items)
MARTINI_MPI_EVENTS(MARTINI_MPI_X_OBSERVER)
#undef MARTINI_MPI_X_OBSERVER
#undef MARTINI_MPI_X_OBSERVER_DATA
#undef MARTINI_MPI_X_OBSERVER_NODATA

// The group an event belongs to (EG_NONE: not filtered, always enabled).
inline EEventGroup EventGroupOf(TEventType ev) {
    switch (ev) {
#define MARTINI_MPI_X_GROUP(Name, Const, Number, Group, Items, Shape) \
    case Const:                                               \
        return Group;
        MARTINI_MPI_EVENTS(MARTINI_MPI_X_GROUP)
#undef MARTINI_MPI_X_GROUP
        default:
            return EG_NONE;
    }
}

// The event's name as in the catalog ("MethodEnter"), or "" for an unknown value.
inline const char *EventName(TEventType ev) {
    switch (ev) {
#define MARTINI_MPI_X_NAME(Name, Const, Number, Group, Items, Shape) \
    case Const:                                              \
        return #Name;
        MARTINI_MPI_EVENTS(MARTINI_MPI_X_NAME)
#undef MARTINI_MPI_X_NAME
        default:
            return "";
    }
}

}  // namespace MPI
}  // namespace Martini
