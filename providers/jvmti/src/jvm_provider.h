// The JVM provider: Martini's tables of what the JVM loaded (classes, methods,
// threads, objects), the native side of the call-graph and allocation probes, and the
// answers to data requests from those tables and from JVMTI. One instance per JVM (see
// agent.cpp).
#pragma once

#include "instrumenter.h"
#include "martini/core/core.h"

#include <jni.h>
#include <jvmti.h>

#include <array>
#include <map>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace martini::jvm {

using core::ClientMask;
using Martini::MPI::BitSet;
using Martini::MPI::TEventType;
using Martini::MPI::TId;
using Martini::MPI::TResult;

struct MethodRecord {
    TId classId = 0;
    std::string name;
    std::string descriptor;
    std::uint16_t access = 0;
    bool hasCode = false;
    std::vector<LineEntry> lines;
    // A constructor that delegates with this(...) in a class with allocation probes:
    // the bytecode index of that call in the loaded code (-1: none). A frame of this
    // constructor stopped there belongs to the object being constructed.
    std::atomic<std::int32_t> delegationBci{-1};
    std::atomic<jmethodID> jmethod{nullptr};
    std::atomic<std::uintptr_t> codeAddress{0};
    std::atomic<unsigned> codeSize{0};
};

struct ClassRecord {
    std::string name;          // source form: java.util.HashMap$Node
    std::string internalName;  // java/util/HashMap$Node
    std::string sourceFile;
    std::uint16_t access = 0;
    std::vector<TId> methods;
    // Heap and monitor filter answers for this class, decided once (InterestOf).
    std::atomic<ClientMask> heapInterest{0}, monitorInterest{0};
    std::atomic<bool> heapKnown{false}, monitorKnown{false};
    TId allocProbe = 0;  // exact allocation mode: its AllocRecord (under the provider's lock)
    TId moduleId = 0;    // 0 until known (classes loaded before VMInit: at their retransformation)
};

// Exact allocation mode: one per class whose constructors got allocation probes; the
// probes pass its id. Written before the class's code reaches the JVM.
struct AllocRecord {
    TId classId = 0;
    ClientMask heapInterest = 0;  // the heap filters' answer for the class
    // The class itself, for the probes of class files before version 49, which cannot
    // pass it (set at ClassPrepare, or at retransformation).
    std::atomic<jweak> klass{nullptr};
};

// Records by id (ids start at 1). Reads are lock-free (the probes read the record
// of the method they are in, or of the class they construct); appends happen under
// the provider's lock and are published before the instrumented class reaches the JVM.
template <class Record, TId kChunkSize, TId kChunks>
class RecordTable {
public:
    Record *Get(TId id) const noexcept {
        if (id == 0 || id > kChunkSize * kChunks) return nullptr;
        const TId i = id - 1;
        Record *chunk = chunks_[i / kChunkSize].load(std::memory_order_acquire);
        return chunk != nullptr ? &chunk[i % kChunkSize] : nullptr;
    }
    // Caller holds the provider's lock. Returns 0 when the table is full.
    TId Add() {
        const TId i = size_;
        if (i >= kChunkSize * kChunks) return 0;
        if (chunks_[i / kChunkSize].load(std::memory_order_relaxed) == nullptr) {
            // Published with release: a probe that reads the id (from code the JVM
            // loads after this returns) sees a constructed chunk.
            chunks_[i / kChunkSize].store(new Record[kChunkSize], std::memory_order_release);
        }
        ++size_;
        return i + 1;
    }
    TId size() const noexcept { return size_; }

private:
    std::array<std::atomic<Record *>, kChunks> chunks_{};
    TId size_ = 0;
};

// Thread interactions: one per call site that got a site probe; the probe passes its
// id. Written before the class's code reaches the JVM.
struct SiteRecord {
    TId methodId = 0;          // the method containing the call
    Interaction kind = Interaction::kNotify;
    std::uint8_t opcode = 0;   // invokevirtual / invokespecial / invokestatic
    std::string owner;         // the call's Methodref class ("java/lang/Thread", "app/Worker")
    std::string name;          // "start"
    ClientMask interest = 0;   // the thread-interaction filters' answer for methodId
};

// Exact allocation mode: one per newarray/anewarray/multianewarray that got an array
// probe; the probe passes its id. Written before the class's code reaches the JVM.
struct ArraySiteRecord {
    TId methodId = 0;             // the method containing the allocation
    std::uint32_t offset = 0;     // its bytecode index in the original code
    ClientMask heapInterest = 0;  // the heap filters' answer for the array's class
    Martini::MPI::EObjectArrayType elementType = Martini::MPI::OAT_OBJECT;  // of the outermost array
    // The array's class: decided at instrumentation (the element class's loader is not
    // known then: the bootstrap loader is assumed for primitive and java.* elements,
    // the allocating class's loader otherwise), checked against the first array's
    // actual class once; then read without lookups.
    std::atomic<TId> classId{0};
    std::atomic<bool> classChecked{false};
};

using MethodTable = RecordTable<MethodRecord, 4096, 16384>;  // up to 64 Mi methods

// The call-graph filters' answer per method id, decided once when the method is
// instrumented and read by its probes on every call. Kept apart from the method
// records, 8 bytes a method, so the probes' lookups share cache lines (in a
// MethodRecord, each call touched a line of its own: measured with perf on javac).
class InterestTable {
public:
    static constexpr TId kChunkSize = 4096, kChunks = 16384;  // as MethodTable
    ~InterestTable() {
        for (auto &c : chunks_) delete[] c.load(std::memory_order_relaxed);
    }
    ClientMask Get(TId id) const noexcept {
        const TId i = id - 1;  // id 0 wraps around: out of range
        if (i >= kChunkSize * kChunks) return 0;
        const std::atomic<ClientMask> *chunk = chunks_[i / kChunkSize].load(std::memory_order_acquire);
        return chunk != nullptr ? chunk[i % kChunkSize].load(std::memory_order_relaxed) : 0;
    }
    // Before the method's instrumented code reaches the JVM (which publishes it).
    void Set(TId id, ClientMask mask) {
        const TId i = id - 1;
        if (i >= kChunkSize * kChunks) return;
        std::atomic<std::atomic<ClientMask> *> &slot = chunks_[i / kChunkSize];
        std::atomic<ClientMask> *chunk = slot.load(std::memory_order_acquire);
        if (chunk == nullptr) {
            auto *fresh = new std::atomic<ClientMask>[kChunkSize]();
            if (slot.compare_exchange_strong(chunk, fresh, std::memory_order_acq_rel)) {
                chunk = fresh;
            } else {
                delete[] fresh;  // another thread's chunk is in `chunk`
            }
        }
        chunk[i % kChunkSize].store(mask, std::memory_order_relaxed);
    }

private:
    std::array<std::atomic<std::atomic<ClientMask> *>, kChunks> chunks_{};
};
using SiteTable = RecordTable<SiteRecord, 1024, 4096>;       // up to 4 Mi call sites
using AllocTable = RecordTable<AllocRecord, 1024, 4096>;     // up to 4 Mi classes
using ArraySiteTable = RecordTable<ArraySiteRecord, 1024, 4096>;  // up to 4 Mi array sites

// Per runtime thread: its id and the shadow stack of instrumented methods entered.
struct ThreadContext {
    TId id = 0;
    std::vector<std::int32_t> stack;
    // A MonitorWaited (ContendedMonitorEntered) is raised only after its MonitorWait
    // (ContendedMonitorEnter) was: a thread that began waiting before the JVM's live
    // phase (Finalizer, Reference Handler) gets no "waited" without a "wait".
    bool waitRaised = false;
    bool contendRaised = false;
};

struct ThreadRecord {
    TId id = 0;
    jweak thread = nullptr;  // the java.lang.Thread
    std::string name;
    std::string group;
    bool alive = true;
    TId parent = 0;  // the thread that called Thread.start() from a probed site; 0: not known
    std::unique_ptr<ThreadContext> context;
};

struct ObjectRecord {
    TId classId = 0;
    std::uint64_t size = 0;
    Martini::MPI::SArrayInfo arrayInfo;
};

class JvmProvider final : public core::Provider {
public:
    JvmProvider(JavaVM *vm, jvmtiEnv *jvmti) : vm_(vm), jvmti_(jvmti) {}

    void AttachCore(core::Core *core) { core_ = core; }
    core::Core &Core() { return *core_; }
    jvmtiEnv *Jvmti() { return jvmti_; }

    // ---- core::Provider
    core::RuntimeDescription Describe() const override;
    bool CanRaise(TEventType event) const noexcept override;
    void OnEventDemandChanged(TEventType event, bool wanted) noexcept override;
    TResult DescribeModule(TId, BitSet, core::ModuleFacts &) noexcept override;
    TResult DescribeClass(TId, BitSet, core::ClassFacts &) noexcept override;
    TResult DescribeMethod(TId, BitSet, core::MethodFacts &) noexcept override;
    TResult DescribeObject(TId, BitSet, core::ObjectFacts &) noexcept override;
    TResult DescribeThread(TId, BitSet, unsigned maxFrames, core::ThreadFacts &) noexcept override;
    TResult ListThreads(std::vector<TId> &) noexcept override;
    TResult DescribeCompiledCode(Martini::MPI::UIOP, BitSet, core::CompiledMethodFacts &) noexcept override;
    TResult CurrentThread(TId &) noexcept override;
    TResult SuspendAll() noexcept override;
    TResult ResumeAll() noexcept override;
    TResult RunGc() noexcept override;
    // JVMTI SetHeapSamplingInterval: kept until the capabilities are in place
    // (ApplyAllocationSampling, from Agent_OnLoad), applied at once after that.
    // Interval 0 asked for before DecideAllocationMode means exact mode (below); after
    // it, in sampled mode, 0 is refused (MRTE_ERROR_PHASE_FAILURE): exact mode needs
    // the classes instrumented from the start.
    TResult SetAllocationSampling(unsigned bytes) noexcept override;
    void ApplyAllocationSampling() noexcept;
    // Agent_OnLoad, after the clients' MPICL_Instantiate and before the capabilities:
    // exact mode when some client observes ObjectAlloc (`allocationsWanted`) and the
    // interval asked for is 0. Exact mode instruments constructors (allocation probes)
    // instead of using SampledObjectAlloc. Decided once; returns it.
    bool DecideAllocationMode(bool allocationsWanted) noexcept;
    bool ExactAllocations() const noexcept { return exactAllocations_; }

    // ---- Class loading (ClassFileLoadHook): declares the class and its methods,
    // asks the call-graph filters once per method, and rewrites the class. Returns the
    // new bytes (empty: leave the class as it is).
    // In exact allocation mode it also asks the heap filters once per class and adds
    // allocation probes to the constructors of the classes some client wants.
    // `redefined`: the class being retransformed, or null for a class being loaded.
    std::vector<std::uint8_t> OnClassFile(JNIEnv *jni, jobject loader, jobject protectionDomain, const char *name,
                                          std::span<const std::uint8_t> bytes, jclass redefined);
    // ClassPrepare: binds jmethodIDs to method records (for stacks and JIT events).
    void OnClassPrepare(JNIEnv *jni, jclass klass);

    // ---- Threads
    ThreadContext &ContextOf(JNIEnv *jni);  // the calling thread's, created on first use
    // The id of a live thread the provider has seen (a linear search: slow paths only),
    // 0 when it has none.
    TId ThreadIdOf(JNIEnv *jni, jthread thread);
    void OnThreadStart(JNIEnv *jni, jthread thread);
    void OnThreadEnd(JNIEnv *jni, jthread thread);

    // ---- Objects (ids are JVMTI tags)
    TId TagOf(JNIEnv *jni, jobject object, bool create);
    TId ClassIdOf(JNIEnv *jni, jclass klass);
    // Which clients want heap (EG_HEAP) or monitor (EG_MONITOR) events for objects of
    // this class: the filters are asked once per class, later events read one atomic.
    ClientMask InterestOf(TId classId, Martini::MPI::EEventGroup group);
    void RememberObject(TId id, ObjectRecord record);
    std::pair<bool, ObjectRecord> ForgetObject(TId id);

    // ObjectAlloc for `object` (sampled: from SampledObjectAlloc; exact: from an
    // allocation probe, whose frames and constructor frames are left off the stack).
    // `array`: DR_ARRAY_INFO for an array from an array probe (else none).
    void RaiseObjectAlloc(JNIEnv *jni, jobject object, TId classId, ClientMask mask, std::uint64_t size,
                          bool fromProbe, const Martini::MPI::SArrayInfo *array = nullptr);

    // ---- Probes (the natives of martini.runtime.Probes)
    void Enter(JNIEnv *jni, std::int32_t id) noexcept;
    void Leave(JNIEnv *jni, std::int32_t id, bool exceptional) noexcept;
    // Probes.allocated (the object's class is the probe's: Probes.alloc checked it) and
    // Probes.allocByClassId (class files before version 49: `checkClass`).
    void Allocated(JNIEnv *jni, jobject object, std::int32_t allocProbe, bool checkClass) noexcept;
    // Probes.allocArray: the array just made by the newarray/anewarray/multianewarray
    // of array site `site`.
    void AllocatedArray(JNIEnv *jni, jobject array, std::int32_t site) noexcept;
    // Probes.interaction / interactionStatic (receiver null): raises ThreadInteraction
    // for the site, and for a Thread.start() site remembers the caller as the new
    // thread's parent.
    void Interaction(JNIEnv *jni, jobject receiver, std::int32_t site) noexcept;
    // Agent_OnLoad: whether some client observes ThreadInteraction, and whether some
    // wants ThreadStart's DR_THREAD_PARENT_ID (both need site probes).
    void SetInteractionMode(bool interactions, bool parents) {
        interactions_ = interactions;
        parents_ = parents;
    }
    bool SiteProbesWanted() const { return interactions_ || parents_; }
    // VMInit, for a class loaded before it: whether retransforming it would change it.
    // When only call probes are wanted, the class is declared from JVMTI (methods,
    // lines, module) and the call-graph filters are asked about its methods; it needs
    // rewriting when some client wants one. Allocation and site probes depend on the
    // code, so with either wanted every class is retransformed.
    bool NeedsRewriting(JNIEnv *jni, jclass klass);
    // VMInit: java.lang.Thread and its start()/interrupt(), for the receiver checks.
    void SetThreadClass(JNIEnv *jni);
    // The Probes methods an allocation stack starts with (left off it), from VMInit.
    void SetProbeMethods(std::vector<jmethodID> methods) { probeMethods_ = std::move(methods); }

    // Every class the agent rewrites is also written to <dir>/<internal name>.class
    // (MARTINI_DUMP_CLASSES; for tests and for inspecting with javap).
    void SetDumpDirectory(std::string dir) { dumpDir_ = std::move(dir); }

    // ---- Phases
    void SetInstrumenting(bool on) { instrumenting_.store(on, std::memory_order_release); }
    void SetDead() { dead_.store(true, std::memory_order_release); }
    bool Dead() const { return dead_.load(std::memory_order_acquire); }

    struct Stats {
        std::atomic<std::uint64_t> classesSeen{0}, classesInstrumented{0}, classesUnparsable{0};
        std::atomic<std::uint64_t> methodsInstrumented{0}, methodsLeftAlone{0};
        std::atomic<std::uint64_t> constructorsAllocProbed{0}, constructorsWithoutAllocProbe{0};
        std::atomic<std::uint64_t> sitesProbed{0};
        std::atomic<std::uint64_t> arraySitesProbed{0};
    };
    Stats &GetStats() { return stats_; }

    TId MethodIdOf(jmethodID m);  // 0 when not known
    MethodTable &Methods() { return methods_; }

private:
    std::string ClassKey(JNIEnv *jni, jobject loader, const std::string &internalName);
    void RaiseClassDeclared(TId classId);
    // The class record under `key` ("<loader>/<internal name>"), made with these
    // facts when first seen; true when made now. Caller holds the lock.
    std::pair<TId, bool> DeclareClass(const std::string &key, const std::string &internalName,
                                      const std::string &sourceFile, std::uint16_t access);
    // The id of the class's method with this name and descriptor; 0 when it has none.
    // Caller holds the lock.
    TId MethodOf(const ClassRecord &cls, const std::string &name, const std::string &descriptor) const;
    // A method record filled from JVMTI (name, access, line table), added to the
    // class's methods. Caller holds the lock. 0 when the table is full.
    TId DeclareMethodFromJvmti(TId classId, jmethodID jm, const std::string &name, const std::string &desc,
                               jint modifiers);
    // Modules (jvm_modules.cpp). A class's module is its JPMS module ("java.base",
    // "jdk.compiler") or, in an unnamed module, where its loader found it (the jar or
    // class directory of its code source). Empty before the live phase.
    std::string ModuleNameOf(JNIEnv *jni, jobject loader, jobject protectionDomain, const char *internalName);
    // Sets the class's module when it has none yet; raises ModuleLoad for a module seen
    // for the first time.
    void AssignModule(JNIEnv *jni, jobject loader, jobject protectionDomain, const char *internalName, TId classId);
    // The class's AllocRecord id, created on first use (kNoProbe when the table is full).
    std::int64_t AllocProbeFor(TId classId, ClientMask heapInterest);
    // The calling thread's stack for an allocation probe of `classId`: without the
    // Probes frames, the constructor that reported, and the this(...) frames that led
    // to it, so the innermost frame is the allocating method.
    std::vector<Martini::MPI::SStackEntry> AllocatingStack(TId classId, jint maxFrames);
    bool IsConstructorOf(TId methodId, TId classId);
    // Whether the call at `site` on `receiver` reaches java.lang.Thread's own method.
    bool ReachesThreadMethod(JNIEnv *jni, jobject receiver, const SiteRecord &site);
    // A site probe id for the call at `offset` of method `methodId` (kNoProbe: table full).
    std::int64_t SiteProbeFor(TId methodId, const CallSite &site, ClientMask interest);
    // An array site probe id for the allocation at `offset` of method `methodId`
    // (kNoProbe: table full).
    std::int64_t ArraySiteFor(TId methodId, std::uint32_t offset, TId classId, ClientMask heapInterest,
                              const std::string &descriptor);
    // The class id of an array class named by its descriptor ("[I"), made from the
    // class file being loaded by `loader` (see ArraySiteRecord::classId).
    TId ArrayClassIdFor(JNIEnv *jni, jobject loader, const std::string &descriptor, const std::string &sourceName);
    void AppendFrames(const jvmtiFrameInfo *frames, jint count, std::vector<Martini::MPI::SStackEntry> &out);

    JavaVM *vm_;
    jvmtiEnv *jvmti_;
    std::atomic<long long> samplingInterval_{-1};  // -1: the JVM's default (512 KiB)
    std::atomic<bool> samplingReady_{false};
    std::atomic<bool> allocationModeDecided_{false};
    bool exactAllocations_ = false;  // written once, in Agent_OnLoad
    std::vector<jmethodID> probeMethods_;
    bool interactions_ = false, parents_ = false;  // written once, in Agent_OnLoad
    jclass threadClass_ = nullptr;                // global ref, from VMInit
    jmethodID threadStart_ = nullptr, threadInterrupt_ = nullptr;
    core::Core *core_ = nullptr;
    std::atomic<bool> instrumenting_{false};
    std::string dumpDir_;
    std::atomic<bool> dead_{false};

    std::mutex mutex_;  // tables below (not the probes' path)
    MethodTable methods_;
    InterestTable callInterest_;  // by method id
    AllocTable allocs_;
    SiteTable sites_;
    std::map<std::pair<TId, std::uint32_t>, TId> siteByLocation_;  // (method, offset) -> site id
    ArraySiteTable arraySites_;
    std::map<std::pair<TId, std::uint32_t>, TId> arraySiteByLocation_;  // (method, offset) -> array site id
    std::unordered_map<TId, TId> parentByThreadTag_;               // started Thread's tag -> caller's id
    std::vector<std::unique_ptr<ClassRecord>> classes_;     // id - 1
    std::unordered_map<std::string, TId> classByKey_;        // "<loader>/<internal name>"
    std::recursive_mutex moduleMutex_;                       // AssignModule, around ModuleLoad
    std::vector<std::string> modules_;                       // id - 1: the module's name (under mutex_)
    std::unordered_map<std::string, TId> moduleByName_;
    std::vector<jweak> loaders_;                             // loader index - 1
    std::unordered_map<jmethodID, TId> methodByJmethod_;
    std::unordered_map<TId, ThreadRecord> threads_;
    TId nextThreadId_ = 1;
    std::unordered_map<TId, ObjectRecord> objects_;
    std::atomic<TId> nextObjectTag_{1};
    Stats stats_;
};

// The one provider of this JVM (set in Agent_OnLoad).
extern JvmProvider *gProvider;

}  // namespace martini::jvm
