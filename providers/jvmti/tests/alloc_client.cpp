// Test client for allocation events (the JVM provider's exact allocation mode):
// observes ObjectAlloc for the classes whose source names start with an include=
// prefix and with no exclude= prefix, or are a name= name, asks for every allocation (interval 0; or
// interval=N), and at VM shutdown writes one line per event to out=FILE:
//   <class> TAB <object id> TAB <size> TAB <thread id> TAB <frame 0> TAB <frame 1> TAB <alloc site> TAB <array>
// Frames are "Class.method" (frame 0 is the innermost; "-" when absent); the alloc
// site is DR_ALLOC_LOCATION's method; <array> is DR_ARRAY_INFO as "TYPE:LENGTH"
// (EObjectArrayType's number), "-" when not given. Options: include=P|P..., exclude=P|P...,
// name=N|N..., interval=N, nostack (no stack, no allocation site), out=FILE
// (comma-separated). Written against mpi/ only.
#include <MpiAPI.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "martini/clients/names.h"
#include "martini/clients/support.h"
#include "split.h"

using namespace Martini::MPI;

namespace {

struct Options {
    std::vector<std::string> include, exclude, names;
    unsigned interval = 0;
    bool stack = true;
    std::string out;
};

class Filter : public IHeapFilter {
public:
    explicit Filter(const Options &o) : o_(o) {}
    bool ShouldNotify(SHeapFilterData &d) override {
        const std::string name = d.szClassName ? d.szClassName : "";
        auto starts = [&](const std::string &p) { return !p.empty() && name.rfind(p, 0) == 0; };
        bool wanted = false;
        for (const auto &p : o_.include) wanted |= starts(p);
        for (const auto &p : o_.exclude) wanted &= !starts(p);
        for (const auto &n : o_.names) wanted |= name == n;
        return wanted;
    }

private:
    const Options &o_;
};

struct Event {
    TId classId, objectId, threadId;
    std::uint64_t size;
    TId frame0, frame1, site;
    int arrayType = -1;
    unsigned arrayLength = 0;
};

class Client : public IObjectAllocEventObserver {
public:
    Client(IMpi &mpi, TId id, Options o) : mpi_(mpi), id_(id), o_(std::move(o)), filter_(o_) {}
    const Options &options() const { return o_; }
    Filter &filter() { return filter_; }

    BitSet EventDataTypes() override {
        const BitSet base = DR_THREAD_ID | DR_OBJECT_ID | DR_CLASS_ID | DR_OBJECT_SIZE | DR_ARRAY_INFO;
        return o_.stack ? base | DR_VM_CALL_STACK | DR_ALLOC_LOCATION : base;
    }
    void HandleEvent(SObjectAllocEventData &d) override {
        Event e{d.classId, d.objectId, d.threadId, d.uiObjectSize, 0, 0, 0};
        if (!(d.validData & DR_CLASS_ID)) e.classId = 0;
        if (d.validData & DR_VM_CALL_STACK) {
            if (d.stackTrace.uiSize > 0) e.frame0 = d.stackTrace.entries[0].methodId;
            if (d.stackTrace.uiSize > 1) e.frame1 = d.stackTrace.entries[1].methodId;
        }
        if (d.validData & DR_ALLOC_LOCATION) e.site = d.allocMethodId;
        if (d.validData & DR_ARRAY_INFO) {
            e.arrayType = static_cast<int>(d.arrayInfo.arrayType);
            e.arrayLength = d.arrayInfo.uiNumElements;
        }
        std::lock_guard lock(mutex_);
        events_.push_back(e);
    }
    void Write() {  // at VmShutdown
        std::lock_guard lock(mutex_);
        FILE *f = std::fopen(o_.out.c_str(), "w");
        if (f == nullptr) {
            std::fprintf(stderr, "alloc_client: cannot write %s\n", o_.out.c_str());
            return;
        }
        for (const Event &e : events_) {
            const std::string array =
                e.arrayType < 0 ? "-" : std::to_string(e.arrayType) + ":" + std::to_string(e.arrayLength);
            std::fprintf(f, "%s\t%llu\t%llu\t%llu\t%s\t%s\t%s\t%s\n", ClassName(e.classId).c_str(),
                         (unsigned long long)e.objectId, (unsigned long long)e.size, (unsigned long long)e.threadId,
                         MethodName(e.frame0).c_str(), MethodName(e.frame1).c_str(), MethodName(e.site).c_str(),
                         array.c_str());
        }
        std::fclose(f);
    }

private:
    std::string ClassName(TId id) {
        if (id == 0) return "-";
        if (auto it = classes_.find(id); it != classes_.end()) return it->second;
        const std::string name = martini::clients::GetClassName(mpi_, id_, id);
        return classes_[id] = name.empty() ? "?" : name;
    }
    std::string MethodName(TId id) {
        if (id == 0) return "-";
        if (auto it = methods_.find(id); it != methods_.end()) return it->second;
        const auto n = martini::clients::GetMethodNames(mpi_, id_, id);
        return methods_[id] = n.ok ? n.className + "." + n.method : "?";
    }

    IMpi &mpi_;
    TId id_;
    Options o_;
    Filter filter_;
    std::mutex mutex_;
    std::vector<Event> events_;
    std::map<TId, std::string> classes_, methods_;
};

}  // namespace

extern "C" API_EXPORT TResult MPICL_Instantiate(IMpi *mpi, TId clientId, const char *szOptions) {
    Options o;
    std::vector<martini::clients::Option> items;
    if (const std::string e = martini::clients::SplitOptions(szOptions, items); !e.empty()) {
        std::fprintf(stderr, "alloc_client: %s\n", e.c_str());
        return MRTE_ERROR_ILLEGAL_ARGUMENT;
    }
    for (const auto &[key, value, hasValue] : items) {
        if (key == "include") {
            for (const auto &p : Split(value, '|')) o.include.push_back(p);
        } else if (key == "name") {
            for (const auto &p : Split(value, '|')) o.names.push_back(p);
        } else if (key == "exclude") {
            for (const auto &p : Split(value, '|')) o.exclude.push_back(p);
        } else if (key == "interval") {
            o.interval = static_cast<unsigned>(std::strtoul(value.c_str(), nullptr, 10));
        } else if (key == "nostack") {
            o.stack = false;
        } else if (key == "out") {
            o.out = value;
        } else {
            std::fprintf(stderr, "alloc_client: unknown option '%s'\n", key.c_str());
            return MRTE_ERROR_ILLEGAL_ARGUMENT;
        }
    }
    if (o.out.empty()) {
        std::fprintf(stderr, "alloc_client: out=FILE is required\n");
        return MRTE_ERROR_ILLEGAL_ARGUMENT;
    }
    auto *client = new Client(*mpi, clientId, std::move(o));  // lives as long as the process
    auto *shutdown = new martini::clients::ForwardNoData<IVmShutdownEventObserver, Client, &Client::Write>(*client);
    TResult r = mpi->RegisterEvent(clientId, *client);
    if (r == MRTE_RESULT_OK) r = mpi->RegisterEvent(clientId, *shutdown);
    if (r == MRTE_RESULT_OK) r = mpi->SetEventGroupFilter(clientId, EG_HEAP, client->filter());
    if (r == MRTE_RESULT_OK) r = mpi->SetAllocationSamplingInterval(clientId, client->options().interval);
    if (r != MRTE_RESULT_OK) std::fprintf(stderr, "alloc_client: registration failed (result %d)\n", int(r));
    return r;
}
