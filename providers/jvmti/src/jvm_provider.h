// The JVM provider as the core sees it (core::Provider): a facade with no state of
// its own that forwards each request to the component that owns the answer:
//
//   vm.h               Vm: JavaVM*, jvmtiEnv*, capabilities, core, object ids (tags)
//   classes.h          ClassRegistry: classes, methods, line tables, ClassLoad/NewMethod
//   modules.h          Modules: each class's module, ModuleLoad
//   instrumentation.h  Instrumentation: ClassFileLoadHook, ClassPrepare, probe wiring
//   calls.h            Calls: call probes, MethodEnter/MethodLeave, shadow stacks
//   allocations.h      Allocations: sampled and exact ObjectAlloc, ObjectFree, objects
//   monitors.h         Monitors: wait/waited, contended enter/entered, owners
//   interactions.h     Interactions: site probes, ThreadInteraction, thread parents
//   threads.h          Threads: ThreadStart/End, thread ids, names, ThreadContext
//   gc.h               Gc: GcStart/GcEnd, RunGc
//   compiled_code.h    CompiledCode: JIT and dynamic-code events, code ranges
//   control.h          `martini control`: EcStart/EcStop from a FIFO
//   sampling.h         Sampling: SampleHit (AsyncGetCallTrace from a signal handler)
//
// agent.cpp puts them together in Agent_OnLoad, VMInit and VMDeath.
#pragma once

#include "vm.h"

namespace martini::jvm {

class JvmProvider final : public core::Provider {
public:
    core::RuntimeDescription Describe() const override;
    bool CanRaise(TEventType event) const noexcept override;
    // Events only clients need are switched on and off with their demand, so a
    // disabled group costs the JVM nothing. (Capabilities were added in Agent_OnLoad.)
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
    TResult SetAllocationSampling(unsigned bytes) noexcept override;
    TResult SetSamplingRate(unsigned hz, bool wall) noexcept override;
    BitSet CoverageItems() const noexcept override;
    TResult DescribeCoverage(TId, BitSet, core::CoverageFacts &) noexcept override;
};

}  // namespace martini::jvm
