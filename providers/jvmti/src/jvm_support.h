// What the JVM provider's components share (private to providers/jvmti/src): the
// event clock, JVMTI string handling and the conversions between JVM and MPI forms.
#pragma once

#include "instrumenter.h"
#include "vm.h"
#include "martini/core/clock.h"

#include <algorithm>
#include <string>
#include <vector>

namespace martini::jvm {

using namespace Martini::MPI;

inline constexpr std::uint8_t kInvokespecialOp = 0xb7;

// DR_CPU_TIMESTAMP: the core's calibrated TSC clock (see Load in agent.cpp).
inline std::uint64_t NowNs() { return core::Clock::NowNs(); }

// The clock items of a call event, computed only when some client asked for them.
template <class Data>
inline void FillTimes(Data &d, BitSet wanted, jvmtiEnv *jvmti) {
    if (wanted & DR_CPU_TIMESTAMP) {
        d.uiCpuTimestamp = NowNs();
        d.validData |= DR_CPU_TIMESTAMP;
    }
    if (wanted & DR_THREAD_CPU_TIME) {
        jlong cpu = 0;
        if (jvmti->GetCurrentThreadCpuTime(&cpu) == JVMTI_ERROR_NONE) {
            d.uiThreadCpuTime = static_cast<std::uint64_t>(cpu);
            d.validData |= DR_THREAD_CPU_TIME;
        }
    }
}

inline std::string SourceName(std::string internalName) {
    std::replace(internalName.begin(), internalName.end(), '/', '.');
    return internalName;
}

// "Ljava/lang/String;" -> "java/lang/String"; arrays keep their descriptor.
inline std::string InternalFromSignature(const char *sig) {
    std::string s(sig ? sig : "");
    if (s.size() > 2 && s.front() == 'L' && s.back() == ';') return s.substr(1, s.size() - 2);
    return s;
}

// JVMTI strings are the JVM's to free.
struct JvmtiString {
    jvmtiEnv *env;
    char *p = nullptr;
    explicit JvmtiString(jvmtiEnv *e) : env(e) {}
    ~JvmtiString() {
        if (p) env->Deallocate(reinterpret_cast<unsigned char *>(p));
    }
    std::string str() const { return p ? p : ""; }
};

inline EMethodAccessType AccessType(std::uint16_t classAccess, std::uint16_t methodAccess) {
    if (methodAccess & kAccPrivate) return MAT_CLASS_INTERNAL;
    // Public and protected members of a public class are what other packages see.
    if ((classAccess & kAccPublic) && (methodAccess & (kAccPublic | kAccProtected))) return MAT_PACKAGE_API;
    return MAT_PACKAGE_INTERNAL;
}

inline unsigned LineAt(const std::vector<LineEntry> &lines, std::uint32_t location) {
    unsigned line = 0;
    for (const auto &e : lines) {
        if (e.offset > location) break;
        line = e.line;
    }
    return line;
}

inline EThreadState StateFromJvmti(jint s) {
    if (s & JVMTI_THREAD_STATE_TERMINATED) return TS_TERMINATED;
    if (!(s & JVMTI_THREAD_STATE_ALIVE)) return TS_NEW;
    if (s & JVMTI_THREAD_STATE_SUSPENDED) return TS_SUSPENDED;
    if (s & JVMTI_THREAD_STATE_BLOCKED_ON_MONITOR_ENTER) return TS_BLOCKED;
    if (s & JVMTI_THREAD_STATE_WAITING_WITH_TIMEOUT) return TS_TIMED_WAITING;
    if (s & JVMTI_THREAD_STATE_WAITING_INDEFINITELY) return TS_WAITING;
    return TS_RUNNING;
}

}  // namespace martini::jvm
