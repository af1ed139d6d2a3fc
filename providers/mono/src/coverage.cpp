#include "coverage.h"

#include "metadata.h"
#include "threads.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace martini::mono {

namespace {

// Where OnData puts the entries of the read running on this thread (Mono's coverage
// callback carries no user data).
constinit thread_local core::CoverageFacts *tFacts = nullptr;
constinit thread_local bool tFailed = false;

// Mono's options: MONO_ENV_OPTIONS (Mono puts them first), then the command line up to
// the program.
std::vector<std::string> MonoOptions() {
    std::vector<std::string> options;
    if (const char *env = std::getenv("MONO_ENV_OPTIONS")) {
        std::istringstream in(env);
        for (std::string o; in >> o;) options.push_back(o);
    }
    std::ifstream cmdline("/proc/self/cmdline", std::ios::binary);
    const std::string all((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
    std::istringstream in(all);
    std::string arg;
    std::getline(in, arg, '\0');  // the mono executable
    while (std::getline(in, arg, '\0') && arg.rfind('-', 0) == 0) options.push_back(arg);
    return options;
}

// Whether the JIT inlines: on unless the last -O= (--optimize=) list that names
// `inline` or `all` turns it off (-O=-inline, -O=-aot,-inline, -O=-all).
bool JitInlines() {
    bool on = true;
    for (const std::string &o : MonoOptions()) {
        std::string list;
        if (o.rfind("-O=", 0) == 0) list = o.substr(3);
        else if (o.rfind("--optimize=", 0) == 0) list = o.substr(11);
        else continue;
        std::istringstream in(list);
        for (std::string opt; std::getline(in, opt, ',');) {
            if (opt == "inline" || opt == "all") on = true;
            if (opt == "-inline" || opt == "-all") on = false;
        }
    }
    return on;
}

bool InCorlib(MonoMethod *m) {
    MonoClass *k = mono_method_get_class(m);
    return k != nullptr && mono_class_get_image(k) == mono_get_corlib();
}

}  // namespace

void Coverage::SetCallbacks(MonoProfilerHandle h) {
    if (!wanted_) return;
    inlining_ = JitInlines();
    mono_profiler_set_coverage_filter_callback(h, Filter);
}

// At JIT time (a compile, an inlining check; several times per method), with the JIT's
// locks held: the clients are asked once per method, and Mono gets the same answer
// every time.
mono_bool Coverage::Filter(MonoProfiler *, MonoMethod *m) {
    if (Vm::Dead()) return false;
    {
        std::lock_guard lock(mutex_);
        if (const auto it = answers_.find(m); it != answers_.end()) return it->second == Answer::kYes;
    }
    Answer answer = Answer::kNo;
    try {
        answer = Ask(m);
    } catch (...) {  // out of memory for names: not covered
    }
    std::lock_guard lock(mutex_);
    return answers_.emplace(m, answer).first->second == Answer::kYes;
}

Coverage::Answer Coverage::Ask(MonoMethod *m) {
    const MethodInfo *info = Metadata::Method(m);
    // Runtime wrappers are Mono's; internal calls and P/Invokes have no IL to count.
    if (info->wrapper || info->native) return Answer::kNo;
    std::vector<SLineNumberTableEntry> lines;
    std::string source;
    Metadata::Lines(*info, lines, source, true);  // a JIT callback: Mono knows this thread
    SCoverageFilterData data{info->className.c_str(), info->name.c_str(), info->signature.c_str(), source.c_str()};
    if (Vm::Core().CoverageInterest(info->id, data) == 0) return Answer::kNo;
    if (!inlining_ || !InCorlib(m)) return Answer::kYes;
    if (!refusalSaid_.exchange(true)) {
        core::LogLine("mscorlib's methods are not covered (" + info->className + "." + info->name +
                      " and the others the clients wanted): Mono 6.8 crashes covering them while its JIT "
                      "inlines; run mono with -O=-inline (with -O=-aot: -O=-aot,-inline) to cover them");
    }
    return Answer::kRefused;
}

void Coverage::OnData(MonoProfiler *, const MonoProfilerCoverageData *d) {
    if (tFacts == nullptr) return;
    SCoverageEntry e{};
    e.kind = CEK_BLOCK;
    e.uiOffset = d->il_offset;
    // Without a location for the offset (no symbols) Mono says line 1: no line.
    e.uiLineNumber = d->file_name != nullptr ? d->line : 0;
    e.uiCount = d->counter;
    try {
        tFacts->entries.push_back(e);
    } catch (...) {  // no exception through Mono's frames
        tFailed = true;
    }
}

TResult Coverage::Read(MonoMethod *m, core::CoverageFacts &f) noexcept {
    // A method not compiled yet (only looked at for inlining, or never called) is
    // reported by Mono with every sequence point at 0.
    tFacts = &f;
    tFailed = false;
    mono_profiler_get_coverage_data(Vm::Handle(), m, OnData);
    tFacts = nullptr;
    if (tFailed) return MRTE_ERROR_FAIL;
    std::stable_sort(f.entries.begin(), f.entries.end(),
                     [](const SCoverageEntry &a, const SCoverageEntry &b) { return a.uiOffset < b.uiOffset; });
    f.given = DR_COVERAGE_BLOCKS;
    return MRTE_RESULT_OK;
}

TResult Coverage::Describe(TId id, core::CoverageFacts &f) noexcept {
    auto *m = reinterpret_cast<MonoMethod *>(static_cast<std::uintptr_t>(id));
    {
        std::lock_guard lock(mutex_);
        const auto it = answers_.find(m);
        if (it == answers_.end() || it->second == Answer::kNo) return MRTE_ERROR_ILLEGAL_ID;
        if (it->second == Answer::kRefused) return MRTE_ERROR_NOT_SUPPORTED;
    }
    // After VmShutdown Mono cleans its profiler state up: no more reads.
    if (Vm::Dead()) return MRTE_ERROR_PHASE_FAILURE;
    // A runtime thread (an event handler on a thread of the program; the main thread at
    // VmShutdown, whose ThreadEnd came first): directly.
    if (tContext != nullptr) return Read(m, f);
    // A thread Mono does not know (a client's own, the one ending the run on a signal):
    // calling into Mono from it aborts the process. A thread of the provider's,
    // attached for the read and hidden from clients, reads; a runtime shutting down
    // attaches no thread (the attach would wait for ever).
    if (mono_runtime_is_shutting_down()) return MRTE_ERROR_FAIL;
    TResult result = MRTE_ERROR_FAIL;
    try {
        std::thread([&] {
            MonoThread *self = Threads::AttachOwnThread();
            result = Read(m, f);
            Threads::DetachOwnThread(self);
        }).join();
    } catch (...) {  // no thread could be started
    }
    return result;
}

}  // namespace martini::mono
