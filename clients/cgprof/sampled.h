// cgprof's sample mode (cgprof=sample[=HZ][,wall]): calling-context trees from
// SampleHit instead of MethodEnter/MethodLeave. Any runtime whose provider raises
// SampleHit serves it; nothing is instrumented.
#pragma once

#include <MpiAPI.h>

#include "martini/clients/output.h"

#include <cstddef>

namespace cgprof {

struct SampledOptions {
    unsigned hz = Martini::MPI::kDefaultSamplingHz;
    bool wall = false;  // wall-clock sampling (every thread), else CPU time
    martini::clients::OutputOptions out;
    std::size_t depth = 4096;
    std::size_t nodes = 500000;
    std::uint64_t timeline = 1000000;  // samples kept with their times (trace=)
    bool paused = false;
};

// Registers the sample-mode observers and asks for the rate; MPICL_Instantiate's result.
Martini::MPI::TResult InstantiateSampled(Martini::MPI::IMpi &mpi, Martini::MPI::TId clientId, SampledOptions options);

}  // namespace cgprof
