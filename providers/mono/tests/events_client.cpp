// Test client for the Mono provider's events and data requests (mono_test.sh): counts
// SampleHit (with stacks, resolved by name at the end), GcStart/GcEnd pairing, moved
// references, allocations per class, contended monitors; runs a GC from a thread the
// runtime does not know; takes the current thread's call stack inside MethodEnter of
// Work.Program.Leaf, with a buffer too short and with a long enough one. Prints one
// line per fact at VmShutdown.
#include <MpiAPI.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>

using namespace Martini::MPI;

namespace {

IMpi *g_mpi = nullptr;
TId g_client = 0;
std::mutex g_mutex;
unsigned long long g_samples = 0, g_spinSamples = 0, g_gcStarts = 0, g_gcEnds = 0, g_unpaired = 0, g_moved = 0;
unsigned long long g_contended = 0, g_entered = 0, g_waits = 0, g_waited = 0, g_timedOut = 0;
std::map<int, unsigned long long> g_interactions;
bool g_inGc = false;
std::map<TId, unsigned long long> g_allocByClass, g_innermost;
TResult g_runGc = MRTE_ERROR_FAIL;
std::thread g_gcThread;
std::string g_stack = "none", g_shortResult = "none";

std::string MethodName(TId id) {
    char name[256] = "", cls[256] = "";
    SMethodInfo info;
    info.szMethodName = name;
    info.uiMethodNameSize = sizeof name;
    info.szClassName = cls;
    info.uiClassNameSize = sizeof cls;
    if (g_mpi->GetMethodInfo(g_client, id, DR_METHOD_NAME | DR_CLASS_NAME, &info) != MRTE_RESULT_OK) return "?";
    std::string out = cls;
    out += '.';
    out += name;
    return out;
}

std::string ClassName(TId id) {
    char cls[256] = "";
    SClassInfo info;
    info.szClassName = cls;
    info.uiClassNameSize = sizeof cls;
    return g_mpi->GetClassInfo(g_client, id, DR_CLASS_NAME, &info) == MRTE_RESULT_OK ? cls : "?";
}

struct Sample : ISampleHitEventObserver {
    BitSet EventDataTypes() override { return DR_THREAD_ID | DR_VM_CALL_STACK | DR_CPU_TIMESTAMP; }
    void HandleEvent(SSampleHitEventData &d) override {
        std::lock_guard lock(g_mutex);
        ++g_samples;
        if ((d.validData & DR_VM_CALL_STACK) && d.stackTrace.uiActualSize > 0) ++g_innermost[d.stackTrace.entries[0].methodId];
        for (unsigned i = 0; i < d.stackTrace.uiActualSize && i < d.stackTrace.uiSize; ++i) {
            if (MethodName(d.stackTrace.entries[i].methodId) == "Work.Program.Spin") {
                ++g_spinSamples;
                break;
            }
        }
    }
} g_sample;

struct GcStart : IGcStartEventObserver {
    BitSet EventDataTypes() override { return DR_CPU_TIMESTAMP; }
    void HandleEvent(SGcStartEventData &) override {
        std::lock_guard lock(g_mutex);
        if (g_inGc) ++g_unpaired;
        g_inGc = true;
        ++g_gcStarts;
    }
} g_gcStart;

struct GcEnd : IGcEndEventObserver {
    BitSet EventDataTypes() override { return DR_CPU_TIMESTAMP; }
    void HandleEvent(SGcEndEventData &) override {
        std::lock_guard lock(g_mutex);
        if (!g_inGc) ++g_unpaired;
        g_inGc = false;
        ++g_gcEnds;
    }
} g_gcEnd;

struct Moved : IGcMovedReferencesEventObserver {
    BitSet EventDataTypes() override { return DR_MOVED_REFERENCES; }
    void HandleEvent(SGcMovedReferencesEventData &d) override {
        std::lock_guard lock(g_mutex);
        g_moved += d.movedReferences.uiActualSize;
    }
} g_moves;

struct Alloc : IObjectAllocEventObserver {
    BitSet EventDataTypes() override { return DR_CLASS_ID | DR_OBJECT_SIZE; }
    void HandleEvent(SObjectAllocEventData &d) override {
        std::lock_guard lock(g_mutex);
        ++g_allocByClass[d.classId];
    }
} g_alloc;

struct Contended : IContendedMonitorEnterEventObserver {
    BitSet EventDataTypes() override { return DR_THREAD_ID | DR_OBJECT_ID; }
    void HandleEvent(SContendedMonitorEnterEventData &) override {
        std::lock_guard lock(g_mutex);
        ++g_contended;
    }
} g_contendedObs;

struct Entered : IContendedMonitorEnteredEventObserver {
    BitSet EventDataTypes() override { return DR_THREAD_ID | DR_OBJECT_ID; }
    void HandleEvent(SContendedMonitorEnteredEventData &) override {
        std::lock_guard lock(g_mutex);
        ++g_entered;
    }
} g_enteredObs;

struct Wait : IMonitorWaitEventObserver {
    BitSet EventDataTypes() override { return DR_THREAD_ID | DR_OBJECT_ID | DR_MONITOR_TIMEOUT; }
    void HandleEvent(SMonitorWaitEventData &) override {
        std::lock_guard lock(g_mutex);
        ++g_waits;
    }
} g_wait;

struct Waited : IMonitorWaitedEventObserver {
    BitSet EventDataTypes() override { return DR_THREAD_ID | DR_OBJECT_ID | DR_MONITOR_TIMEOUT; }
    void HandleEvent(SMonitorWaitedEventData &d) override {
        std::lock_guard lock(g_mutex);
        ++g_waited;
        if ((d.validData & DR_MONITOR_TIMEOUT) && d.bTimedOut) ++g_timedOut;
    }
} g_waitedObs;

struct Interaction : IThreadInteractionEventObserver {
    BitSet EventDataTypes() override { return DR_THREAD_ID | DR_OBJECT_ID | DR_INTERACTION_TYPE; }
    void HandleEvent(SThreadInteractionEventData &d) override {
        std::lock_guard lock(g_mutex);
        ++g_interactions[int(d.interactionType)];
    }
} g_interaction;

struct OnlyLeaf : ICallGraphFilter {
    bool ShouldNotify(SCallGraphFilterData &d) override {
        return std::strcmp(d.szClassName, "Work.Program") == 0;
    }
} g_onlyLeaf;

struct Enter : IMethodEnterEventObserver {
    BitSet EventDataTypes() override { return DR_METHOD_ID | DR_THREAD_ID; }
    void HandleEvent(SMethodEnterEventData &d) override {
        if (MethodName(d.methodId) != "Work.Program.Leaf") return;
        SStackEntry frames[8];
        SThreadInfo info;
        info.stackTrace.entries = frames;
        info.stackTrace.uiSize = 2;
        const TResult shortResult = g_mpi->GetThreadInfo(g_client, d.threadId, DR_VM_CALL_STACK, &info);
        SThreadInfo full;
        full.stackTrace.entries = frames;
        full.stackTrace.uiSize = 8;
        std::string stack;
        if (g_mpi->GetThreadInfo(g_client, d.threadId, DR_VM_CALL_STACK, &full) == MRTE_RESULT_OK) {
            for (unsigned i = 0; i < full.stackTrace.uiActualSize; ++i) {
                if (i != 0) stack += '<';
                stack += MethodName(frames[i].methodId);
            }
        }
        std::lock_guard lock(g_mutex);
        g_shortResult = std::string(ResultName(shortResult)) + " " + std::to_string(info.stackTrace.uiActualSize);
        g_stack = stack;
    }
} g_enter;

struct Init : IVmInitEventObserver {
    BitSet EventDataTypes() override { return DR_THREAD_ID; }
    void HandleEvent(SVmInitEventData &) override {
        // A thread the runtime does not know asks for a collection.
        g_gcThread = std::thread([] { g_runGc = g_mpi->RunGC(g_client); });
    }
} g_init;

struct Shutdown : IVmShutdownEventObserver {
    void HandleEvent() override {
        if (g_gcThread.joinable()) g_gcThread.join();
        std::lock_guard lock(g_mutex);
        unsigned long long nodes = 0;
        for (const auto &[cls, n] : g_allocByClass) {
            if (ClassName(cls) == "Work.Node") nodes += n;
        }
        std::fprintf(stderr, "events: samples %llu spin %llu\n", g_samples, g_spinSamples);
        std::fprintf(stderr, "events: gc %llu %llu unpaired %llu\n", g_gcStarts, g_gcEnds, g_unpaired);
        std::fprintf(stderr, "events: moved %llu\n", g_moved);
        std::fprintf(stderr, "events: nodes %llu\n", nodes);
        std::fprintf(stderr, "events: contended %llu entered %llu\n", g_contended, g_entered);
        std::fprintf(stderr, "events: rungc %s\n", ResultName(g_runGc));
        std::fprintf(stderr, "events: waits %llu waited %llu timedout %llu\n", g_waits, g_waited, g_timedOut);
        std::fprintf(stderr, "events: interactions notify %llu start %llu join %llu sleep %llu\n",
                     g_interactions[IT_NOTIFY], g_interactions[IT_START], g_interactions[IT_JOIN], g_interactions[IT_SLEEP]);
        std::fprintf(stderr, "events: stack %s\n", g_stack.c_str());
        std::fprintf(stderr, "events: short %s\n", g_shortResult.c_str());
    }
} g_shutdown;

}  // namespace

extern "C" API_EXPORT TResult MPICL_Instantiate(IMpi *mpi, TId clientId, const char *) {
    g_mpi = mpi;
    g_client = clientId;
    IEventObserver *observers[] = {&g_sample, &g_gcStart, &g_gcEnd, &g_moves, &g_alloc, &g_contendedObs,
                                   &g_enteredObs, &g_enter, &g_init, &g_shutdown, &g_wait, &g_waitedObs,
                                   &g_interaction};
    for (IEventObserver *o : observers) {
        if (const TResult r = mpi->RegisterEvent(clientId, *o); r != MRTE_RESULT_OK) {
            std::fprintf(stderr, "events: RegisterEvent(%d) failed: %s\n", int(o->Type()), ResultName(r));
            return r;
        }
    }
    return mpi->SetEventGroupFilter(clientId, EG_CALL_GRAPH, g_onlyLeaf);
}
