// The methods of martini/runtime/Probes (providers/jvmti/java): one row each, so that
// the method references the rewriter emits and the natives the agent binds with
// RegisterNatives come from the same names and descriptors.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

namespace martini::jvm {

inline constexpr std::string_view kProbesClass = "martini/runtime/Probes";

// Probes.lostEnters: the enters lost to a StackOverflowError thrown by the call to
// `enter` itself (the thread's stack was full at the method's first instruction). A
// handler over the enter probe counts them with field accesses only, no call, and
// rethrows; the agent says the total at VMDeath.
inline constexpr std::string_view kLostEntersField = "lostEnters";
inline constexpr std::string_view kLostEntersDescriptor = "I";

enum class Probe : std::size_t {
    kEnter,
    kLeave,
    kLeaveExceptional,
    kAlloc,
    kAllocated,
    kAllocByClassId,
    kAllocArray,
    kInteraction,
    kInteractionStatic,
    kCounters,
    kCount,
};
inline constexpr std::size_t kProbeCount = 11;

constexpr std::size_t ProbeIndex(Probe p) { return static_cast<std::size_t>(p); }

struct ProbeMethod {
    Probe probe;
    // Literals: data() is NUL-terminated, as JNI wants it.
    std::string_view name;
    std::string_view descriptor;
    bool native;            // bound by the agent (alloc is Java: it calls allocated)
    bool allocationFrame;   // left off the stacks of allocation events
};

inline constexpr std::array<ProbeMethod, kProbeCount> kProbeMethods = {{
    {Probe::kEnter, "enter", "(I)V", true, false},
    {Probe::kLeave, "leave", "(I)V", true, false},
    {Probe::kLeaveExceptional, "leaveExceptional", "(I)V", true, false},
    {Probe::kAlloc, "alloc", "(Ljava/lang/Object;Ljava/lang/Class;I)V", false, true},
    {Probe::kAllocated, "allocated", "(Ljava/lang/Object;I)V", true, true},
    // Class files before version 49 cannot ldc the class that alloc wants.
    {Probe::kAllocByClassId, "allocByClassId", "(Ljava/lang/Object;I)V", true, true},
    {Probe::kAllocArray, "allocArray", "(Ljava/lang/Object;I)V", true, true},
    {Probe::kInteraction, "interaction", "(Ljava/lang/Object;I)V", true, false},
    {Probe::kInteractionStatic, "interactionStatic", "(I)V", true, false},
    // Coverage: the calling thread's counters of a covered method (Java, compiled
    // inline; the method adds to them without a call).
    {Probe::kCounters, "counters", "(II)[J", false, false},
    // Coverage of calls alone: one more to the calling thread's count of a method's
    // calls (Java, compiled inline), the method's only probe.
    {Probe::kCount, "count", "(I)V", false, false},
}};

constexpr bool ProbeRowsInEnumOrder() {
    for (std::size_t i = 0; i < kProbeMethods.size(); ++i) {
        if (ProbeIndex(kProbeMethods[i].probe) != i) return false;
    }
    return true;
}
static_assert(ProbeRowsInEnumOrder(), "kProbeMethods is indexed by Probe");

constexpr const ProbeMethod &ProbeOf(Probe p) { return kProbeMethods[ProbeIndex(p)]; }

}  // namespace martini::jvm
