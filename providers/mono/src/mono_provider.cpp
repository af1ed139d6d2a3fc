#include "mono_provider.h"

#include "compiled_code.h"
#include "coverage.h"
#include "heap.h"
#include "metadata.h"
#include "sampling.h"
#include "threads.h"

namespace martini::mono {

core::RuntimeDescription MonoProvider::Describe() const {
    core::RuntimeDescription d{RT_MONO, "Mono", ""};
    d.version = MonoString(mono_get_runtime_build_info()).str();
    return d;
}

bool MonoProvider::CanRaise(TEventType event) const noexcept {
    switch (event) {
        case EV_VM_INIT: case EV_VM_SHUTDOWN: case EV_MODULE_LOAD: case EV_CLASS_LOAD: case EV_NEW_METHOD:
        case EV_JITTED_METHOD_LOADED: case EV_DYNAMIC_CODE_GENERATED: case EV_METHOD_ENTER: case EV_METHOD_LEAVE:
        case EV_THREAD_START: case EV_THREAD_END: case EV_OBJECT_ALLOC: case EV_GC_START: case EV_GC_END:
        case EV_GC_MOVED_REFERENCES: case EV_CONTENDED_MONITOR_ENTER: case EV_CONTENDED_MONITOR_ENTERED:
        case EV_SAMPLE_HIT: case EV_EC_SET_OUTPUT_DIRECTORY: case EV_MONITOR_WAIT: case EV_MONITOR_WAITED:
        case EV_THREAD_INTERACTION:
            return true;
        default:
            // docs/mono-provider.md says why each of the others is not raised.
            return false;
    }
}

TResult MonoProvider::DescribeModule(TId id, BitSet, core::ModuleFacts &f) noexcept {
    return Metadata::DescribeModule(id, f);
}
TResult MonoProvider::DescribeClass(TId id, BitSet requested, core::ClassFacts &f) noexcept {
    try {
        return Metadata::DescribeClass(id, requested, f);
    } catch (...) {
        return MRTE_ERROR_FAIL;
    }
}
TResult MonoProvider::DescribeMethod(TId id, BitSet requested, core::MethodFacts &f) noexcept {
    try {
        return Metadata::DescribeMethod(id, requested, f);
    } catch (...) {
        return MRTE_ERROR_FAIL;
    }
}
TResult MonoProvider::DescribeObject(TId id, BitSet requested, core::ObjectFacts &f) noexcept {
    return Heap::DescribeObject(id, requested, f);
}
TResult MonoProvider::DescribeThread(TId id, BitSet requested, unsigned maxFrames, core::ThreadFacts &f) noexcept {
    try {
        return Threads::Describe(id, requested, maxFrames, f);
    } catch (...) {
        return MRTE_ERROR_FAIL;
    }
}
TResult MonoProvider::ListThreads(std::vector<TId> &out) noexcept {
    try {
        return Threads::List(out);
    } catch (...) {
        return MRTE_ERROR_FAIL;
    }
}
TResult MonoProvider::DescribeCompiledCode(UIOP address, BitSet, core::CompiledMethodFacts &f) noexcept {
    return CompiledCode::Describe(address, f);
}
TResult MonoProvider::CurrentThread(TId &id) noexcept { return Threads::CurrentThread(id); }
TResult MonoProvider::RunGc() noexcept {
    try {
        return Heap::RunGc();
    } catch (...) {
        return MRTE_ERROR_FAIL;  // no thread could be started
    }
}
TResult MonoProvider::SetAllocationSampling(unsigned bytes) noexcept { return Heap::SetSampling(bytes); }

TResult MonoProvider::SetSamplingRate(unsigned hz, bool wall) noexcept { return Sampling::SetRate(hz, wall); }

BitSet MonoProvider::CoverageItems() const noexcept { return Coverage::Items(); }
TResult MonoProvider::DescribeCoverage(TId id, BitSet, core::CoverageFacts &f) noexcept {
    return Coverage::Describe(id, f);
}

}  // namespace martini::mono
