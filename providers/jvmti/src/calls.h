// Calls: MethodEnter and MethodLeave from the call probes. Owns the call-graph
// filters' answer per method (asked once, when the method is instrumented), the
// probe selector for call probes, the probes' natives enter/leave/leaveExceptional
// and the shadow stack discipline (the stack itself lives in the thread's context).
//
// Locks: none. interest_ is written before the method's instrumented code reaches the
// JVM and read lock-free by the probes; the shadow stack is the calling thread's own.
#pragma once

#include "classes.h"
#include "threads.h"

namespace martini::jvm {

class Calls {
public:
    // Agent_OnLoad: some client observes MethodEnter or MethodLeave.
    static void Decide() { wanted_ = Vm::Wants(EV_METHOD_ENTER) || Vm::Wants(EV_METHOD_LEAVE); }
    static bool Wanted() { return wanted_; }
    // Whether some client wants the method's calls (it has call probes when loaded now).
    static bool Probed(TId id) { return interest_.Get(id) != 0; }
    static void AddCapabilities(jvmtiCapabilities &caps);
    // The rewriter's call-probe selector for a class being loaded (empty when no client
    // wants calls): asks the filters once per method.
    static ProbeSelector Selector(ClassLoad &load);
    // A class loaded before VMInit: asks the filters about its methods; true when some
    // client wants one (the class then needs rewriting).
    static bool AskAbout(const std::string &internalName, const std::vector<DeclaredMethod> &methods);
    // ThreadEnd: frames still open were left by an exception from code the probes could
    // not see (a super() call): reported as exceptional exits.
    static void LeaveAll(JNIEnv *jni, ThreadContext &ctx) {
        while (!ctx.stack.empty()) Leave(jni, ctx.stack.back(), true);
    }

    // The natives of martini.runtime.Probes (the hot path: no lock, no allocation
    // once the shadow stack has grown, no virtual call).
    static void JNICALL Enter(JNIEnv *jni, jclass, jint id) noexcept;
    static void JNICALL LeaveNormal(JNIEnv *jni, jclass, jint id) noexcept;
    static void JNICALL LeaveExceptional(JNIEnv *jni, jclass, jint id) noexcept;

private:
    static void Leave(JNIEnv *jni, std::int32_t id, bool exceptional) noexcept;

    static inline bool wanted_ = false;  // written once, in Agent_OnLoad
    // The call-graph filters' answer per method id, read by the probes on every call.
    static inline InterestTable interest_;
};

}  // namespace martini::jvm
