// Allocations: ObjectAlloc and ObjectFree, and the object data requests. Two modes,
// decided once in Agent_OnLoad: sampled (JVMTI SampledObjectAlloc, every N bytes) or
// exact (interval 0 asked for in MPICL_Instantiate: allocation probes in constructors
// and array probes after newarray/anewarray/multianewarray). Owns the sampling
// interval, the allocation and array-site probe records, their selectors and natives,
// and the records of objects that have an id (for GetObjectInfo and ObjectFree).
//
// Locks: mutex_ guards the appends to allocs_ and arraySites_, probeByClass_,
// arraySiteByLocation_ and objects_. The probes read allocs_ and arraySites_ without
// a lock (RecordTable: written before the class's code reaches the JVM).
#pragma once

#include "classes.h"

#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace martini::jvm {

// Exact mode: one per class whose constructors got allocation probes; the probes pass
// its id.
struct AllocRecord {
    TId classId = 0;
    ClientMask heapInterest = 0;  // the heap filters' answer for the class
    // The class itself, for the probes of class files before version 49, which cannot
    // pass it (set at ClassPrepare, or at retransformation).
    std::atomic<jweak> klass{nullptr};
};

// Exact mode: one per array allocation instruction that got an array probe.
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

class Allocations {
public:
    // Agent_OnLoad, after the clients' MPICL_Instantiate and before the capabilities:
    // exact mode when some client observes ObjectAlloc and the interval asked for is 0.
    static void Decide();
    // Detach: the next attach's clients choose the sampling interval and mode anew.
    static void ForgetDecision() {
        decided_.store(false);
        samplingReady_.store(false);
        samplingInterval_.store(-1);
    }
    static bool Exact() { return exact_; }
    static void AddCapabilities(jvmtiCapabilities &caps);
    // After the capabilities: the interval asked for so far reaches the JVM.
    static void CapabilitiesAdded();
    static void SetCallbacks(jvmtiEventCallbacks &callbacks);
    static void OnDemand(TEventType event, bool wanted);
    // JVMTI SetHeapSamplingInterval: kept until the capabilities are in place, applied
    // at once after that. Interval 0 asked for before Decide means exact mode; after
    // it, in sampled mode, 0 is refused (MRTE_ERROR_PHASE_FAILURE): exact mode needs
    // the classes instrumented from the start.
    static TResult SetSampling(unsigned bytes);

    // The rewriter's selectors for a class being loaded (empty in sampled mode).
    static AllocSelector ClassSelector(ClassLoad &load);
    static ArraySelector ArraysSelector(ClassLoad &load);
    // The class object for the probes that cannot pass it: at ClassPrepare, or after
    // a retransformation (`klass`: the class being redefined).
    static void BindClass(JNIEnv *jni, TId allocProbe, jclass klass);
    static void BindPreparedClass(JNIEnv *jni, TId classId, jclass klass);
    // VMInit: the Probes methods an allocation stack starts with (left off it).
    static void FindProbeMethods(JNIEnv *jni, jclass probes);

    static TResult DescribeObject(TId id, core::ObjectFacts &f);

    // The natives of martini.runtime.Probes: Probes.allocated (the object's class is
    // the probe's: Probes.alloc checked it), Probes.allocByClassId (class files before
    // version 49: the class is checked here) and Probes.allocArray.
    static void JNICALL Allocated(JNIEnv *jni, jclass, jobject object, jint allocProbe) noexcept;
    static void JNICALL AllocatedByClassId(JNIEnv *jni, jclass, jobject object, jint allocProbe) noexcept;
    static void JNICALL AllocatedArray(JNIEnv *jni, jclass, jobject array, jint site) noexcept;

private:
    struct ObjectRecord {
        TId classId = 0;
        std::uint64_t size = 0;
        Martini::MPI::SArrayInfo arrayInfo;
    };
    using AllocTable = RecordTable<AllocRecord, 1024, 4096>;          // up to 4 Mi classes
    using ArraySiteTable = RecordTable<ArraySiteRecord, 1024, 4096>;  // up to 4 Mi array sites

    static void JNICALL OnSampledObjectAlloc(jvmtiEnv *, JNIEnv *jni, jthread, jobject object, jclass klass,
                                             jlong size);
    static void JNICALL OnObjectFree(jvmtiEnv *, jlong tag);
    static void ApplySampling();
    static void Report(JNIEnv *jni, jobject object, std::int32_t allocProbe, bool checkClass);
    // The class's AllocRecord id, made on first use (kNoProbe when the table is full).
    static std::int64_t ProbeFor(TId classId, ClientMask heapInterest);
    static std::int64_t ArraySiteFor(TId methodId, std::uint32_t offset, TId classId, ClientMask heapInterest,
                                     const std::string &descriptor);
    // ObjectAlloc for `object` (sampled: from SampledObjectAlloc; exact: from a probe,
    // whose frames and constructor frames are left off the stack). `array`:
    // DR_ARRAY_INFO for an array from an array probe (else none).
    static void Raise(JNIEnv *jni, jobject object, TId classId, ClientMask mask, std::uint64_t size,
                      bool fromProbe, const Martini::MPI::SArrayInfo *array = nullptr);
    static void FillStack(Martini::MPI::SObjectAllocEventData &d, bool fromProbe,
                          std::vector<Martini::MPI::SStackEntry> &stack);
    // The calling thread's stack for an allocation probe of `classId`: without the
    // Probes frames, the constructor that reported, and the this(...) frames that led
    // to it, so the innermost frame is the allocating method.
    static std::vector<Martini::MPI::SStackEntry> AllocatingStack(TId classId, jint maxFrames);

    static inline std::atomic<long long> samplingInterval_{-1};  // -1: the JVM's default (512 KiB)
    static inline std::atomic<bool> samplingReady_{false};
    static inline std::atomic<bool> decided_{false};
    static inline bool exact_ = false;              // written once, in Agent_OnLoad
    static inline std::vector<jmethodID> probeMethods_;  // written once, at VMInit

    static inline std::mutex mutex_;
    static inline AllocTable allocs_;
    static inline std::unordered_map<TId, TId> probeByClass_;  // class id -> AllocRecord id
    static inline ArraySiteTable arraySites_;
    static inline std::map<std::pair<TId, std::uint32_t>, TId> arraySiteByLocation_;  // (method, offset) -> id
    static inline std::unordered_map<TId, ObjectRecord> objects_;
};

}  // namespace martini::jvm
