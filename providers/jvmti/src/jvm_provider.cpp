#include "jvm_provider.h"

#include "coverage.h"

#include "allocations.h"
#include "classes.h"
#include "compiled_code.h"
#include "gc.h"
#include "jvm_support.h"
#include "modules.h"
#include "monitors.h"
#include "sampling.h"
#include "threads.h"

namespace martini::jvm {

core::RuntimeDescription JvmProvider::Describe() const {
    core::RuntimeDescription d{RT_JVM, "Java Virtual Machine", ""};
    if (Vm::Jni() == nullptr) return d;
    auto property = [](const char *key) {
        JvmtiString value(Vm::Jvmti());
        return Vm::Jvmti()->GetSystemProperty(key, &value.p) == JVMTI_ERROR_NONE ? value.str() : std::string();
    };
    d.name = property("java.vm.name");
    d.version = property("java.vm.version");
    return d;
}

bool JvmProvider::CanRaise(TEventType event) const noexcept {
    switch (event) {
        case EV_VM_INIT: case EV_VM_SHUTDOWN: case EV_CLASS_LOAD: case EV_NEW_METHOD:
        case EV_METHOD_ENTER: case EV_METHOD_LEAVE: case EV_THREAD_START: case EV_THREAD_END:
        case EV_GC_START: case EV_GC_END: case EV_OBJECT_ALLOC: case EV_OBJECT_FREE:
        case EV_MONITOR_WAIT: case EV_MONITOR_WAITED: case EV_CONTENDED_MONITOR_ENTER:
        case EV_CONTENDED_MONITOR_ENTERED: case EV_JITTED_METHOD_LOADED: case EV_JITTED_METHOD_UNLOADED:
        case EV_DYNAMIC_CODE_GENERATED: case EV_EC_SET_OUTPUT_DIRECTORY: case EV_EC_START: case EV_EC_STOP:
        case EV_EC_CUSTOM_COMMAND: case EV_EC_ATTACH: case EV_EC_DETACH: case EV_THREAD_INTERACTION:
        case EV_MODULE_LOAD: case EV_SAMPLE_HIT:
            return true;
        default:
            return false;  // not yet: module unloading, moved references
    }
}

void JvmProvider::OnEventDemandChanged(TEventType event, bool wanted) noexcept {
    // Each component switches the JVMTI events behind its own MPI events (lifecycle,
    // classes and threads stay on: the agent needs them itself).
    Gc::OnDemand(event, wanted);
    Allocations::OnDemand(event, wanted);
    Monitors::OnDemand(event, wanted);
    CompiledCode::OnDemand(event, wanted);
}

TResult JvmProvider::DescribeModule(TId id, BitSet, core::ModuleFacts &f) noexcept {
    return Modules::Describe(id, f);
}
TResult JvmProvider::DescribeClass(TId id, BitSet, core::ClassFacts &f) noexcept {
    return ClassRegistry::DescribeClass(id, f);
}
TResult JvmProvider::DescribeMethod(TId id, BitSet, core::MethodFacts &f) noexcept {
    return ClassRegistry::DescribeMethod(id, f);
}
TResult JvmProvider::DescribeObject(TId id, BitSet, core::ObjectFacts &f) noexcept {
    return Allocations::DescribeObject(id, f);
}
TResult JvmProvider::DescribeThread(TId id, BitSet requested, unsigned maxFrames, core::ThreadFacts &f) noexcept {
    return Threads::Describe(id, requested, maxFrames, f);
}
TResult JvmProvider::ListThreads(std::vector<TId> &out) noexcept { return Threads::List(out); }
TResult JvmProvider::DescribeCompiledCode(UIOP address, BitSet, core::CompiledMethodFacts &f) noexcept {
    return CompiledCode::Describe(address, f);
}
TResult JvmProvider::CurrentThread(TId &id) noexcept { return Threads::CurrentThread(id); }

// Coverage probes need only class rewriting, which every JVM the agent runs in has.
BitSet JvmProvider::CoverageItems() const noexcept {
    return DR_COVERAGE_BLOCKS | DR_COVERAGE_BRANCHES | DR_COVERAGE_CALLS;
}

TResult JvmProvider::DescribeCoverage(TId method, BitSet, core::CoverageFacts &f) noexcept {
    return Coverage::Describe(method, f);
}
TResult JvmProvider::SuspendAll() noexcept { return Threads::SuspendAll(); }
TResult JvmProvider::ResumeAll() noexcept { return Threads::ResumeAll(); }
TResult JvmProvider::RunGc() noexcept { return Gc::Run(); }
TResult JvmProvider::SetAllocationSampling(unsigned bytes) noexcept { return Allocations::SetSampling(bytes); }
TResult JvmProvider::SetSamplingRate(unsigned hz, bool wall) noexcept { return Sampling::SetRate(hz, wall); }

}  // namespace martini::jvm
