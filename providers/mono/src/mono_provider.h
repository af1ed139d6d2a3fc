// The Mono provider as the core sees it (core::Provider): a facade with no state of
// its own that forwards each request to the component that owns the answer (vm.h
// lists them). module.cpp puts them together.
#pragma once

#include "vm.h"

namespace martini::mono {

class MonoProvider final : public core::Provider {
public:
    core::RuntimeDescription Describe() const override;
    bool CanRaise(TEventType event) const noexcept override;
    TResult DescribeModule(TId, BitSet, core::ModuleFacts &) noexcept override;
    TResult DescribeClass(TId, BitSet, core::ClassFacts &) noexcept override;
    TResult DescribeMethod(TId, BitSet, core::MethodFacts &) noexcept override;
    TResult DescribeObject(TId, BitSet, core::ObjectFacts &) noexcept override;
    TResult DescribeThread(TId, BitSet, unsigned maxFrames, core::ThreadFacts &) noexcept override;
    TResult ListThreads(std::vector<TId> &) noexcept override;
    TResult DescribeCompiledCode(Martini::MPI::UIOP, BitSet, core::CompiledMethodFacts &) noexcept override;
    TResult CurrentThread(TId &) noexcept override;
    TResult RunGc() noexcept override;
    TResult SetAllocationSampling(unsigned bytes) noexcept override;
    TResult SetSamplingRate(unsigned hz, bool wall) noexcept override;
    BitSet CoverageItems() const noexcept override;
    TResult DescribeCoverage(TId, BitSet, core::CoverageFacts &) noexcept override;
};

}  // namespace martini::mono
