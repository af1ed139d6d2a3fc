// Instrumentation: ClassFileLoadHook and ClassPrepare, and the wiring of the probes.
// At ClassFileLoadHook it declares the class (ClassRegistry) and asks the rewriter to
// place the probes the components choose through their selectors (Calls: call
// probes; Allocations: allocation and array probes; Interactions: site probes). At
// VMInit it binds the natives of martini.runtime.Probes, makes every module read the
// probes' module, and retransforms the classes loaded before (those the probes would
// change). Owns the probes class and module, the phase flag `instrumenting_` and the
// counters printed at VMDeath.
//
// Locks: none of its own (the records it declares are ClassRegistry's; the flags are
// atomics or written once before any class loads).
#pragma once

#include "classes.h"

#include <span>
#include <string>
#include <vector>

namespace martini::jvm {

// What the rewriter did, counted for the VMDeath summary.
struct InstrumentationStats {
    std::atomic<std::uint64_t> classesSeen{0}, classesInstrumented{0}, classesUnparsable{0};
    std::atomic<std::uint64_t> methodsInstrumented{0}, methodsLeftAlone{0};
    std::atomic<std::uint64_t> constructorsAllocProbed{0}, constructorsWithoutAllocProbe{0};
    std::atomic<std::uint64_t> sitesProbed{0};
    std::atomic<std::uint64_t> arraySitesProbed{0};
};

class Instrumentation {
public:
    // Agent_OnLoad, after the components decided: bytecode instrumentation is wanted
    // for call probes, exact allocations or site probes; class events need the hook too.
    static void Decide();
    static bool Wanted() { return wanted_; }
    static void AddCapabilities(jvmtiCapabilities &caps);
    static void SetCallbacks(jvmtiEventCallbacks &callbacks);
    // Switches the class hooks on, and puts martini-probes.jar (in `agentDir`) on the
    // bootstrap class path.
    static void EnableEvents(const std::string &agentDir);
    // VMInit (or at once when `attached`): the probes' natives and modules, then the
    // classes loaded before.
    static void Start(JNIEnv *jni, bool attached = false);
    // VMDeath: one line when something was left alone or contained.
    static void PrintSummary();
    // VMDeath, before the clients' shutdown: one line when calls were not seen because
    // the call to the enter probe overflowed the stack (Probes.lostEnters).
    static void ReportLostEnters(JNIEnv *jni);

    // Attached: the methods with call probes that were running on some thread when
    // their class was retransformed (a running call keeps its old code, so its calls
    // are not seen until it returns), as notes for the user; none when none.
    static std::vector<std::string> RunningProbedMethods(JNIEnv *jni);
    // Detach, once the probes are off (Vm::Dead): every class with probes is
    // retransformed while the hook changes nothing, so it gets its original bytes.
    struct Restored {
        std::size_t classes = 0, failed = 0;
    };
    static Restored Restore(JNIEnv *jni);

private:
    static void JNICALL OnClassFileLoadHook(jvmtiEnv *jvmti, JNIEnv *jni, jclass redefined, jobject loader,
                                            const char *name, jobject protectionDomain, jint length,
                                            const unsigned char *data, jint *newLength, unsigned char **newData);
    static void JNICALL OnClassPrepare(jvmtiEnv *jvmti, JNIEnv *jni, jthread, jclass klass);
    // Declares the class and rewrites it. Returns the new bytes (empty: leave the class
    // as it is). `redefined`: the class being retransformed, or null for a class being loaded.
    static std::vector<std::uint8_t> OnClassFile(JNIEnv *jni, jobject loader, jobject protectionDomain,
                                                 const char *name, std::span<const std::uint8_t> bytes,
                                                 jclass redefined);
    static void Count(const char *name, const InstrumentResult &result);
    static void SetRunLines(const ClassLoad &load, const InstrumentResult &result);
    static void Dump(const char *name, const std::vector<std::uint8_t> &bytes);
    static bool RegisterNatives(JNIEnv *jni, jclass probes);
    static void ReadProbesModule(JNIEnv *jni, jclass probes);
    // A class prepared: its jmethodIDs bound to its records, and its class object to
    // its allocation probe.
    static void Prepared(JNIEnv *jni, jclass klass);
    // VMInit, for a class loaded before it: whether retransforming it would change it.
    static bool NeedsRewriting(JNIEnv *jni, jclass klass);
    static void RetransformLoaded(JNIEnv *jni, jclass probes);
    // Test hook (MARTINI_BYTECODE_DIGESTS=FILE:CLASS-PREFIX): appends "PHASE METHOD
    // DIGEST" for every method of the loaded classes whose name starts with the prefix,
    // the digest taken over the bytecodes the JVM runs now (JVMTI GetBytecodes), so a
    // test can tell instrumented code from the original.
    static void WriteDigests(JNIEnv *jni, const char *phase);
    static inline std::string digestFile_, digestPrefix_;
    static inline bool jarAdded_ = false;
    static inline bool attached_ = false;  // Start came at attach, not at VMInit  // the probes' jar, on the boot class path once

    static inline bool wanted_ = false;   // written in Agent_OnLoad
    static inline bool classes_ = false;  // the class hooks are on
    static inline std::atomic<bool> instrumenting_{false};  // from VMInit, once the probes are bound
    // Every class rewritten is also written to <dir>/<internal name>.class
    // (MARTINI_DUMP_CLASSES; for tests and for inspecting with javap).
    static inline std::string dumpDir_;
    static inline jclass probesClass_ = nullptr;    // global ref: the natives stay bound
    static inline jobject probesModule_ = nullptr;  // the bootstrap class path's unnamed module
    static inline jmethodID getModule_ = nullptr;   // Class.getModule()
    static inline InstrumentationStats stats_;
};

}  // namespace martini::jvm
