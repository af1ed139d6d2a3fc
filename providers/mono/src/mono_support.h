// Mono's profiler API headers (Mono 6.8, profiler API version 3) and small helpers.
// The module is not linked against libmono: Mono's executable exports the runtime and
// loads the module RTLD_GLOBAL, so its mono_* references bind to the executable.
#pragma once

#include <mono/jit/jit.h>
#include <mono/metadata/appdomain.h>
#include <mono/metadata/assembly.h>
#include <mono/metadata/attrdefs.h>
#include <mono/metadata/class.h>
#include <mono/metadata/debug-helpers.h>
#include <mono/metadata/image.h>
#include <mono/metadata/loader.h>
#include <mono/metadata/mono-debug.h>
#include <mono/metadata/mono-gc.h>
#include <mono/metadata/object.h>
#include <mono/metadata/profiler.h>
#include <mono/metadata/threads.h>
#include <mono/utils/mono-publib.h>

#include <ctime>
#include <cstdint>
#include <string>

static_assert(MONO_PROFILER_API_VERSION == 3,
              "the Mono provider is written against Mono's profiler API version 3 (Mono 6.x)");

namespace martini::mono {

// A string Mono allocated (mono_free).
class MonoString {
public:
    explicit MonoString(char *p) : p_(p) {}
    ~MonoString() {
        if (p_ != nullptr) mono_free(p_);
    }
    MonoString(const MonoString &) = delete;
    MonoString &operator=(const MonoString &) = delete;
    std::string str() const { return p_ != nullptr ? std::string(p_) : std::string(); }

private:
    char *p_;
};

inline std::uint64_t ThreadCpuNs() {
    timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
    return std::uint64_t(ts.tv_sec) * 1000000000u + std::uint64_t(ts.tv_nsec);
}

}  // namespace martini::mono
