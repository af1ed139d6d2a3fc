// cgprof's options (cgprof=OPTION,...): what they mean, their parsing and checks,
// for the exact modes (cgprof.cpp) and the sample mode (sampled.cpp).
#pragma once

#include "martini/clients/output.h"
#include "sampled.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cgprof {

// The options' help, printed for cgprof=help and after an option in error.
extern const char kUsage[];

struct Options {
    bool time = true;
    bool cpu = false;
    std::vector<std::string> includes, excludes;
    std::string filter;
    martini::clients::OutputOptions out;
    std::size_t depth = 4096;
    std::size_t nodes = 500000;
    std::uint64_t trace = 100000;
    bool traceGiven = false;
    bool paused = false;
    bool lines = false;     // call-site lines (Node::callLine)
    unsigned sampleHz = 0;  // sample mode when not 0
    bool wall = false;
    bool exactOnly = false;  // an option of the exact modes was given (counts, cpu, filters, lines)
};

// Fills `o` from the option text; the error to print, or "" when the options are good.
std::string ParseOptions(const char *text, Options &o);

// The rule set (docs/filters.md) of filter=, or of include=/exclude= (excludes first,
// then includes); "" when none was given.
std::string FilterRules(const Options &o);

// The options of sample mode (o.sampleHz not 0).
SampledOptions SampledOptionsOf(const Options &o);

}  // namespace cgprof
