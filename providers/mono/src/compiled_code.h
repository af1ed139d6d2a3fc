// CompiledCode: JittedMethodLoaded (jit_done: JIT-compiled methods and AOT methods
// when their code is first used; once per method), DynamicCodeGenerated (jit_code_buffer:
// trampolines, helpers, delegate invokers, exception-handling code; method bodies are
// JittedMethodLoaded), and the code-by-address data request. Also feeds Calls the
// methods compiled without its filter (AOT code).
//
// Locks: mutex_ guards the set of methods already reported.
#pragma once

#include "vm.h"

#include <mutex>
#include <unordered_set>

namespace martini::mono {

class CompiledCode {
public:
    static void SetCallbacks(MonoProfilerHandle h);
    static TResult Describe(UIOP address, core::CompiledMethodFacts &f);

private:
    static void OnJitDone(MonoProfiler *, MonoMethod *method, MonoJitInfo *jinfo);
    static void OnCodeBuffer(MonoProfiler *, const mono_byte *buffer, uint64_t size,
                             MonoProfilerCodeBufferType type, const void *data);

    static inline std::mutex mutex_;
    static inline std::unordered_set<MonoMethod *> reported_;
};

}  // namespace martini::mono
