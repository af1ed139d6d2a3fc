// Test client for thread interactions and thread parents (the JVM provider's site
// probes): observes ThreadInteraction for the call sites in methods whose class's
// source name starts with an include= prefix, whose class is no exclude= name and
// whose method is no skip= name, and ThreadStart with DR_THREAD_PARENT_ID; at VM
// shutdown writes to out=FILE
//   interaction TAB <type> TAB <receiver class or -> TAB <thread id> TAB <object id or 0> TAB <timestamp given 0/1>
//   thread TAB <id> TAB <name> TAB <parent id or 0> TAB <GetThreadInfo's parent or 0>
// Options: include=P|P..., exclude=C|C..., skip=M|M..., noparents (no ThreadStart
// observer: no thread lines), out=FILE (comma-separated).
// Written against mpi/ only.
#include <MpiAPI.h>

#include <cstdio>
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
    std::vector<std::string> include, exclude, skip;
    std::string out;
    bool parents = true;
};

class Filter : public IThreadInteractionFilter {
public:
    explicit Filter(const Options &o) : o_(o) {}
    bool ShouldNotify(SThreadInteractionFilterData &d) override {
        const std::string cls = d.szClassName ? d.szClassName : "", method = d.szMethodName ? d.szMethodName : "";
        bool wanted = false;
        for (const auto &p : o_.include) wanted |= !p.empty() && cls.rfind(p, 0) == 0;
        for (const auto &c : o_.exclude) wanted &= cls != c;
        for (const auto &m : o_.skip) wanted &= method != m;
        return wanted;
    }

private:
    const Options &o_;
};

const char *TypeName(EThreadInteractionType t) {
    switch (t) {
        case IT_NOTIFY: return "notify";
        case IT_NOTIFY_ALL: return "notifyAll";
        case IT_START: return "start";
        case IT_JOIN: return "join";
        case IT_SLEEP: return "sleep";
        case IT_INTERRUPT: return "interrupt";
        default: return "?";
    }
}

struct Interaction {
    EThreadInteractionType type;
    TId classId, threadId, objectId;
    bool timestamp;
};
struct Thread {
    TId id, parent;
    std::string name;
};

class Client : public IThreadInteractionEventObserver {
public:
    Client(IMpi &mpi, TId id, Options o) : mpi_(mpi), id_(id), o_(std::move(o)), filter_(o_) {}
    Filter &filter() { return filter_; }
    BitSet EventDataTypes() override {
        return DR_THREAD_ID | DR_OBJECT_ID | DR_CLASS_ID | DR_INTERACTION_TYPE | DR_CPU_TIMESTAMP;
    }
    void HandleEvent(SThreadInteractionEventData &d) override {
        Interaction e{d.interactionType, (d.validData & DR_CLASS_ID) ? d.classId : 0, d.threadId,
                      (d.validData & DR_OBJECT_ID) ? d.objectId : 0, (d.validData & DR_CPU_TIMESTAMP) != 0};
        std::lock_guard lock(mutex_);
        interactions_.push_back(e);
    }
    void Started(const SThreadStartEventData &d) {
        std::lock_guard lock(mutex_);
        threads_.push_back({d.threadId, (d.validData & DR_THREAD_PARENT_ID) ? d.parentThreadId : 0,
                            d.szThreadName ? d.szThreadName : ""});
    }
    void Write() {
        std::lock_guard lock(mutex_);
        FILE *f = std::fopen(o_.out.c_str(), "w");
        if (f == nullptr) return;
        for (const Interaction &e : interactions_) {
            std::fprintf(f, "interaction\t%s\t%s\t%llu\t%llu\t%d\n", TypeName(e.type), ClassName(e.classId).c_str(),
                         (unsigned long long)e.threadId, (unsigned long long)e.objectId, e.timestamp ? 1 : 0);
        }
        for (const Thread &t : threads_) {
            SThreadInfo info;
            TId infoParent = 0;
            if (mpi_.GetThreadInfo(id_, t.id, DR_THREAD_PARENT_ID, &info) == MRTE_RESULT_OK &&
                (info.validData & DR_THREAD_PARENT_ID)) {
                infoParent = info.parentThreadId;
            }
            std::fprintf(f, "thread\t%llu\t%s\t%llu\t%llu\n", (unsigned long long)t.id, t.name.c_str(),
                         (unsigned long long)t.parent, (unsigned long long)infoParent);
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

    IMpi &mpi_;
    TId id_;
    Options o_;
    Filter filter_;
    std::mutex mutex_;
    std::vector<Interaction> interactions_;
    std::vector<Thread> threads_;
    std::map<TId, std::string> classes_;
};

}  // namespace

extern "C" API_EXPORT TResult MPICL_Instantiate(IMpi *mpi, TId clientId, const char *szOptions) {
    Options o;
    std::vector<martini::clients::Option> items;
    if (const std::string e = martini::clients::SplitOptions(szOptions, items); !e.empty()) {
        std::fprintf(stderr, "interact_client: %s\n", e.c_str());
        return MRTE_ERROR_ILLEGAL_ARGUMENT;
    }
    for (const auto &[key, value, hasValue] : items) {
        std::vector<std::string> *list = key == "include" ? &o.include : key == "exclude" ? &o.exclude
                                       : key == "skip"    ? &o.skip
                                                          : nullptr;
        if (list != nullptr) {
            for (const auto &p : Split(value, '|')) list->push_back(p);
        } else if (key == "noparents") {
            o.parents = false;
        } else if (key == "out") {
            o.out = value;
        } else {
            std::fprintf(stderr, "interact_client: unknown option '%s'\n", key.c_str());
            return MRTE_ERROR_ILLEGAL_ARGUMENT;
        }
    }
    if (o.out.empty()) {
        std::fprintf(stderr, "interact_client: out=FILE is required\n");
        return MRTE_ERROR_ILLEGAL_ARGUMENT;
    }
    const bool parents = o.parents;
    auto *client = new Client(*mpi, clientId, std::move(o));  // lives as long as the process
    auto *starts = new martini::clients::Forward<IThreadStartEventObserver, Client, SThreadStartEventData, &Client::Started>(
        *client, DR_THREAD_ID | DR_THREAD_NAME | DR_THREAD_PARENT_ID);
    auto *shutdown = new martini::clients::ForwardNoData<IVmShutdownEventObserver, Client, &Client::Write>(*client);
    TResult r = mpi->RegisterEvent(clientId, *client);
    if (r == MRTE_RESULT_OK && parents) r = mpi->RegisterEvent(clientId, *starts);
    if (r == MRTE_RESULT_OK) r = mpi->RegisterEvent(clientId, *shutdown);
    if (r == MRTE_RESULT_OK) r = mpi->SetEventGroupFilter(clientId, EG_THREAD_INTERACTION, client->filter());
    if (r != MRTE_RESULT_OK) std::fprintf(stderr, "interact_client: registration failed (result %d)\n", int(r));
    return r;
}
