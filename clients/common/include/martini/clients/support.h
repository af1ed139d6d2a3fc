// Building blocks the bundled profilers share: per-runtime-thread state without a
// lock per event, observers that forward an event to a member function, and the
// runtime's name for reports. Header-only, against mpi/ only.
#pragma once

#include <MpiAPI.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace martini::clients {

// One State per runtime thread (DR_THREAD_ID), created on first use. Get() is a
// compare on a thread_local cache when the OS thread runs the same runtime thread as
// last time (the usual case), a locked map lookup otherwise. States live as long as
// the PerThread does. State needs a public `threadId` member.
template <class State>
class PerThread {
public:
    State &Get(Martini::MPI::TId threadId) {
        struct Cache {
            const PerThread *owner;
            Martini::MPI::TId thread;
            State *state;
        };
        // initial-exec: one TLS load, no __tls_get_addr call (glibc keeps static TLS
        // room for libraries loaded later; the core does the same).
        static thread_local Cache cache __attribute__((tls_model("initial-exec"))) = {nullptr, 0, nullptr};
        if (cache.owner == this && cache.thread == threadId) return *cache.state;
        std::lock_guard lock(mutex_);
        auto &slot = states_[threadId];
        if (!slot) {
            slot = std::make_unique<State>();
            slot->threadId = threadId;
        }
        cache = {this, threadId, slot.get()};
        return *slot;
    }

    // The states by thread id, under the lock (for the end of the run).
    template <class F>
    void ForEachOrdered(F f) {
        std::lock_guard lock(mutex_);
        std::vector<State *> ordered;
        for (auto &[id, s] : states_) ordered.push_back(s.get());
        std::sort(ordered.begin(), ordered.end(), [](auto *a, auto *b) { return a->threadId < b->threadId; });
        for (State *s : ordered) f(*s);
    }

private:
    std::mutex mutex_;
    std::unordered_map<Martini::MPI::TId, std::unique_ptr<State>> states_;
};

// An observer of event Base (with data Data) that asks for `wanted` and calls
// (target.*Handler)(data).
template <class Base, class Target, class Data, void (Target::*Handler)(const Data &)>
class Forward final : public Base {
public:
    Forward(Target &target, Martini::MPI::BitSet wanted) : target_(target), wanted_(wanted) {}
    Martini::MPI::BitSet EventDataTypes() override { return wanted_; }
    void HandleEvent(Data &data) override { (target_.*Handler)(data); }

private:
    Target &target_;
    Martini::MPI::BitSet wanted_;
};

// The same for events without data (VmShutdown, EcStart, ...).
template <class Base, class Target, void (Target::*Handler)()>
class ForwardNoData final : public Base {
public:
    explicit ForwardNoData(Target &target) : target_(target) {}
    void HandleEvent() override { (target_.*Handler)(); }

private:
    Target &target_;
};

// For MPICL_Instantiate: "help" prints `usage` and refuses; otherwise parse(text, o)
// returns "" or the problem, printed as "<tool>: <problem>" with the usage. Returns
// MRTE_RESULT_OK or the result to refuse with.
template <class Options, class Parse>
Martini::MPI::TResult ParseClientOptions(const char *tool, const char *usage, const char *text, Options &o, Parse parse) {
    const std::string s = text ? text : "";
    if (s == "help" || s == "--help") {
        std::fputs(usage, stderr);
        return Martini::MPI::MRTE_ERROR_FAIL;
    }
    if (std::string e = parse(text, o); !e.empty()) {
        std::fprintf(stderr, "%s: %s\n%s", tool, e.c_str(), usage);
        return Martini::MPI::MRTE_ERROR_ILLEGAL_ARGUMENT;
    }
    return Martini::MPI::MRTE_RESULT_OK;
}

// "OpenJDK 64-Bit Server VM 17.0.15", "" when the runtime does not say.
inline std::string RuntimeName(Martini::MPI::IMpi &mpi, Martini::MPI::TId clientId) {
    Martini::MPI::SRuntimeInfo info;
    if (mpi.GetRuntimeInfo(clientId, &info) != Martini::MPI::MRTE_RESULT_OK) return "";
    std::string name = info.szRuntimeName;
    if (info.szRuntimeVersion[0] != '\0') name += std::string(" ") + info.szRuntimeVersion;
    return name;
}

}  // namespace martini::clients
