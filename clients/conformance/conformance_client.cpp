// The provider conformance kit: a client that observes every event of the catalog
// and checks the promises MPI makes to clients. Because it is an ordinary client, it
// runs unchanged on every provider: a runtime vendor runs their runtime with it and
// reads the verdict.
//
// Checks (each violation is reported with the rule's name):
//   pairing        MethodLeave leaves the innermost method entered on its thread
//   thread-end     a thread ends with no method left open; no event on it afterwards
//   lifecycle      VmInit once, before VmShutdown; VmShutdown once; nothing after it
//   valid-data     validData only holds items the client asked for and the event has
//   ids            every valid id item is non-zero
//   gc-order       GcStart and GcEnd alternate
//   monitor-order  MonitorWaited follows MonitorWait, ContendedMonitorEntered follows
//                  ContendedMonitorEnter, on the same thread and monitor
//   modules        ModuleLoad has a non-zero id and a name; a ClassLoad or NewMethod
//                  with DR_MODULE_ID names a module whose ModuleLoad came before
//   data-requests  GetMethodInfo answers OK/PARTIAL_INFO for methods seen in events,
//                  with a name; GetThreadInfo knows the threads events came from;
//                  GetModuleInfo answers each module's name as its ModuleLoad gave it;
//                  a method's module (GetMethodInfo) is its class's (GetClassInfo)
//                  and was announced by ModuleLoad
//
// Options (comma-separated): report=FILE (%p: the process id, %t: the start time)
// writes the verdict there as JSON lines
// (one per violation, then a summary); max=N stops recording details after N
// violations (default 50). The report also lists the modules seen, one line each
// ({"module":ID,"name":"...","classes":N,"methods":M}: N classes by ClassLoad, M of
// the methods seen in events by GetMethodInfo). The verdict line on stderr:
//   conformance: PASS (N events checked)   or   conformance: FAIL (M violations ...)
#include <MpiAPI.h>

#include "martini/clients/expand.h"
#include "martini/clients/names.h"
#include "martini/clients/option_names.h"
#include "martini/clients/output_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

using namespace Martini::MPI;

namespace {

IMpi *g_mpi = nullptr;
TId g_clientId = 0;

class Checker {
public:
    void Violation(const char *rule, const std::string &what) {
        std::lock_guard lock(mutex_);
        ++violations_;
        if (details_.size() < maxDetails_) details_.emplace_back(rule, what);
    }
    void Counted() {
        std::lock_guard lock(mutex_);
        ++events_;
    }

    // State the observers below read and change with mutex() held.
    std::recursive_mutex &mutex() { return mutex_; }
    struct ThreadState {
        std::vector<TId> stack;
        bool ended = false;
        std::pair<TId, bool> waiting{0, false};     // MonitorWait pending on object
        std::pair<TId, bool> contending{0, false};  // ContendedMonitorEnter pending
    };
    std::map<TId, ThreadState> threads;
    std::set<TId> methodsSeen;
    struct Module {
        std::string name;
        std::uint64_t classes = 0;
        std::uint64_t methods = 0;  // methods seen in events that GetMethodInfo puts here
    };
    std::map<TId, Module> modules;  // by ModuleLoad
    bool vmInit = false, vmShutdown = false, inGc = false;

    void SetMaxDetails(std::size_t n) { maxDetails_ = n; }
    void SetReport(std::string path) { report_ = std::move(path); }

    void Finish() {
        CheckDataRequests();
        std::lock_guard lock(mutex_);
        for (const auto &[id, t] : threads) {
            if (!t.ended && !t.stack.empty()) {
                // Threads still running at shutdown may legitimately be inside methods
                // (daemon threads, main calling System.exit): not a violation.
            }
        }
        for (const auto &[rule, what] : details_) {
            std::fprintf(stderr, "conformance: violation [%s] %s\n", rule.c_str(), what.c_str());
        }
        if (violations_ == 0) {
            std::fprintf(stderr, "conformance: PASS (%llu events checked)\n", (unsigned long long)events_);
        } else {
            std::fprintf(stderr, "conformance: FAIL (%llu violations in %llu events)\n",
                         (unsigned long long)violations_, (unsigned long long)events_);
        }
        if (report_.empty()) return;
        // Complete or not there at all: a full disk is named, not left as a short report.
        const std::string path = martini::clients::ExpandOutputName(report_);
        const std::string error = martini::clients::WriteFileAtomically(path, [&](std::ostream &out) {
            for (const auto &[rule, what] : details_) {
                out << "{\"rule\":\"" << rule << "\",\"detail\":\"" << Escape(what) << "\"}\n";
            }
            for (const auto &[id, m] : modules) {
                out << "{\"module\":" << id << ",\"name\":\"" << Escape(m.name) << "\",\"classes\":" << m.classes
                    << ",\"methods\":" << m.methods << "}\n";
            }
            out << "{\"verdict\":\"" << (violations_ == 0 ? "pass" : "fail") << "\",\"events\":" << events_
                << ",\"violations\":" << violations_ << "}\n";
        });
        if (!error.empty()) std::fprintf(stderr, "conformance: %s; no report was left\n", error.c_str());
    }

private:
    static std::string Escape(const std::string &s) {
        std::string o;
        for (char c : s) {
            if (c == '"' || c == '\\') o.push_back('\\');
            o.push_back(c);
        }
        return o;
    }

    // Asks about (at most 100 of) the methods and threads events named, and about
    // (at most 100 of) the modules.
    void CheckDataRequests() {
        std::vector<TId> methods, threadIds;
        std::vector<std::pair<TId, std::string>> moduleNames;
        {
            std::lock_guard lock(mutex_);
            for (const auto &[id, m] : modules) {
                if (moduleNames.size() == 100) break;
                moduleNames.emplace_back(id, m.name);
            }
            for (TId m : methodsSeen) {
                if (methods.size() == 100) break;
                methods.push_back(m);
            }
            for (const auto &[id, t] : threads) {
                if (!t.ended) threadIds.push_back(id);
            }
        }
        for (TId m : methods) {
            char name[512];
            SMethodInfo info;
            info.szMethodName = name;
            info.uiMethodNameSize = sizeof name;
            const TResult r = g_mpi->GetMethodInfo(g_clientId, m, DR_METHOD_NAME, &info);
            if (r != MRTE_RESULT_OK && r != MRTE_ERROR_PARTIAL_INFO) {
                Violation("data-requests", "GetMethodInfo(" + std::to_string(m) + ") returned " + ResultName(r));
            } else if ((info.validData & DR_METHOD_NAME) == 0 || name[0] == '\0') {
                Violation("data-requests", "GetMethodInfo(" + std::to_string(m) + ") gave no method name");
            }
        }
        for (const auto &[id, expected] : moduleNames) {
            std::vector<char> name(expected.size() + 1);
            SModuleInfo info;
            info.szModuleName = name.data();
            info.uiModuleNameSize = static_cast<unsigned>(name.size());
            const TResult r = g_mpi->GetModuleInfo(g_clientId, id, DR_MODULE_NAME, &info);
            if (r != MRTE_RESULT_OK || expected != name.data()) {
                Violation("data-requests", "GetModuleInfo(" + std::to_string(id) + ") returned " + ResultName(r) +
                                               " and '" + std::string(r == MRTE_RESULT_OK ? name.data() : "") +
                                               "', not the ModuleLoad's '" + expected + "'");
            }
        }
        CheckMethodModules();
        for (TId t : threadIds) {
            SThreadInfo info;
            const TResult r = g_mpi->GetThreadInfo(g_clientId, t, DR_THREAD_STATE, &info);
            if (r == MRTE_ERROR_ILLEGAL_ID) {
                Violation("data-requests", "GetThreadInfo(" + std::to_string(t) +
                                               ") does not know a thread that raised events");
            }
        }
    }

    // Every method seen in events: its module by GetMethodInfo must be its class's by
    // GetClassInfo and must have been announced; counted per module for the report.
    void CheckMethodModules() {
        std::vector<TId> methods;
        {
            std::lock_guard lock(mutex_);
            methods.assign(methodsSeen.begin(), methodsSeen.end());
        }
        std::map<TId, std::pair<bool, TId>> classModule;  // class -> (given, module)
        for (TId m : methods) {
            SMethodInfo info;
            const TResult r = g_mpi->GetMethodInfo(g_clientId, m, DR_MODULE_ID | DR_CLASS_ID, &info);
            if ((r != MRTE_RESULT_OK && r != MRTE_ERROR_PARTIAL_INFO) || (info.validData & DR_MODULE_ID) == 0) continue;
            if (info.validData & DR_CLASS_ID) {
                auto known = classModule.find(info.classId);
                if (known == classModule.end()) {
                    SClassInfo c;
                    const TResult rc = g_mpi->GetClassInfo(g_clientId, info.classId, DR_MODULE_ID, &c);
                    const bool given = (rc == MRTE_RESULT_OK || rc == MRTE_ERROR_PARTIAL_INFO) && (c.validData & DR_MODULE_ID);
                    known = classModule.emplace(info.classId, std::pair{given, c.moduleId}).first;
                }
                if (!known->second.first || known->second.second != info.moduleId) {
                    Violation("data-requests", "GetMethodInfo(" + std::to_string(m) + ") gives module " +
                                                   std::to_string(info.moduleId) + ", GetClassInfo of its class does not");
                }
            }
            std::lock_guard lock(mutex_);
            auto module = modules.find(info.moduleId);
            if (module == modules.end()) {
                Violation("modules", "GetMethodInfo(" + std::to_string(m) + ") names module " +
                                         std::to_string(info.moduleId) + ", never announced by ModuleLoad");
            } else {
                ++module->second.methods;
            }
        }
    }

    std::recursive_mutex mutex_;  // recursive: observers hold it while reporting
    std::uint64_t events_ = 0, violations_ = 0;
    std::size_t maxDetails_ = 50;
    std::vector<std::pair<std::string, std::string>> details_;
    std::string report_;
};

Checker g_check;

// validData may only hold items the observer asked for (here: every item the event
// supports, which is what the observers below ask for).
template <class Observer, class Data>
void CommonChecks(const Data &d, const char *event) {
    g_check.Counted();
    if ((d.validData & ~Observer::kSupportedData) != 0) {
        g_check.Violation("valid-data", std::string(event) + " validData has items the event does not carry");
    }
    if (g_check.vmShutdown) g_check.Violation("lifecycle", std::string(event) + " raised after VmShutdown");
}

template <class Data>
void IdCheck(const Data &d, BitSet item, TId id, const char *event, const char *field) {
    if ((d.validData & item) != 0 && id == 0) {
        g_check.Violation("ids", std::string(event) + " has " + field + " = 0 marked valid");
    }
}

// Events on a thread after its ThreadEnd.
template <class Data>
void ThreadAlive(const Data &d, const char *event) {
    if ((d.validData & DR_THREAD_ID) == 0) return;
    auto it = g_check.threads.find(d.threadId);
    if (it != g_check.threads.end() && it->second.ended) {
        g_check.Violation("thread-end", std::string(event) + " on thread " + std::to_string(d.threadId) +
                                            " after its ThreadEnd");
    }
}

// Generic observer for every DATA event: the common checks, then a per-event hook.
template <class Observer>
class Check : public Observer {
public:
    void HandleEvent(typename Observer::TEventData &d) override {
        std::lock_guard lock(g_check.mutex());
        CommonChecks<Observer>(d, EventName(Observer::kEventType));
        Specific(d);
    }

private:
    void Specific(typename Observer::TEventData &) {}
};

template <>
void Check<IVmInitEventObserver>::Specific(SVmInitEventData &) {
    if (g_check.vmInit) g_check.Violation("lifecycle", "VmInit raised twice");
    g_check.vmInit = true;
}

template <>
void Check<IMethodEnterEventObserver>::Specific(SMethodEnterEventData &d) {
    IdCheck(d, DR_METHOD_ID, d.methodId, "MethodEnter", "methodId");
    IdCheck(d, DR_THREAD_ID, d.threadId, "MethodEnter", "threadId");
    ThreadAlive(d, "MethodEnter");
    if ((d.validData & (DR_METHOD_ID | DR_THREAD_ID)) != (DR_METHOD_ID | DR_THREAD_ID)) {
        g_check.Violation("valid-data", "MethodEnter without method and thread id");
        return;
    }
    g_check.threads[d.threadId].stack.push_back(d.methodId);
    g_check.methodsSeen.insert(d.methodId);
}

template <>
void Check<IMethodLeaveEventObserver>::Specific(SMethodLeaveEventData &d) {
    ThreadAlive(d, "MethodLeave");
    if ((d.validData & (DR_METHOD_ID | DR_THREAD_ID)) != (DR_METHOD_ID | DR_THREAD_ID)) {
        g_check.Violation("valid-data", "MethodLeave without method and thread id");
        return;
    }
    auto &stack = g_check.threads[d.threadId].stack;
    if (stack.empty()) {
        g_check.Violation("pairing", "MethodLeave of " + std::to_string(d.methodId) + " on thread " +
                                         std::to_string(d.threadId) + " with no method entered");
    } else if (stack.back() != d.methodId) {
        g_check.Violation("pairing", "MethodLeave of " + std::to_string(d.methodId) + " on thread " +
                                         std::to_string(d.threadId) + " but the innermost entered is " +
                                         std::to_string(stack.back()));
        stack.pop_back();
    } else {
        stack.pop_back();
    }
}

template <>
void Check<IModuleLoadEventObserver>::Specific(SModuleLoadEventData &d) {
    IdCheck(d, DR_MODULE_ID, d.moduleId, "ModuleLoad", "moduleId");
    if ((d.validData & (DR_MODULE_ID | DR_MODULE_NAME)) != (DR_MODULE_ID | DR_MODULE_NAME) ||
        d.szModuleName == nullptr || d.szModuleName[0] == '\0') {
        g_check.Violation("modules", "ModuleLoad without its id and name");
        return;
    }
    g_check.modules[d.moduleId] = {d.szModuleName, 0};
}

template <>
void Check<IModuleUnloadEventObserver>::Specific(SModuleUnloadEventData &d) {
    if ((d.validData & DR_MODULE_ID) == 0) return;
    if (g_check.modules.erase(d.moduleId) == 0) {
        g_check.Violation("modules", "ModuleUnload of module " + std::to_string(d.moduleId) + ", never loaded");
    }
}

// A module id an event names must have been announced by ModuleLoad.
template <class Data>
bool ModuleKnown(const Data &d, const char *event) {
    if ((d.validData & DR_MODULE_ID) == 0) return false;
    if (g_check.modules.count(d.moduleId) == 0) {
        g_check.Violation("modules", std::string(event) + " names module " + std::to_string(d.moduleId) +
                                         " before its ModuleLoad");
        return false;
    }
    return true;
}

template <>
void Check<IClassLoadEventObserver>::Specific(SClassLoadEventData &d) {
    if (ModuleKnown(d, "ClassLoad")) ++g_check.modules[d.moduleId].classes;
}

template <>
void Check<INewMethodEventObserver>::Specific(SNewMethodEventData &d) {
    ModuleKnown(d, "NewMethod");
}

template <>
void Check<IThreadStartEventObserver>::Specific(SThreadStartEventData &d) {
    IdCheck(d, DR_THREAD_ID, d.threadId, "ThreadStart", "threadId");
    if (d.validData & DR_THREAD_ID) g_check.threads[d.threadId] = {};
}

template <>
void Check<IThreadEndEventObserver>::Specific(SThreadEndEventData &d) {
    ThreadAlive(d, "ThreadEnd");
    if ((d.validData & DR_THREAD_ID) == 0) return;
    auto &t = g_check.threads[d.threadId];
    if (!t.stack.empty()) {
        g_check.Violation("thread-end", "thread " + std::to_string(d.threadId) + " ended with " +
                                            std::to_string(t.stack.size()) + " method(s) not left");
    }
    t.ended = true;
}

template <>
void Check<IGcStartEventObserver>::Specific(SGcStartEventData &) {
    if (g_check.inGc) g_check.Violation("gc-order", "GcStart while a GC is running");
    g_check.inGc = true;
}

template <>
void Check<IGcEndEventObserver>::Specific(SGcEndEventData &) {
    if (!g_check.inGc) g_check.Violation("gc-order", "GcEnd without GcStart");
    g_check.inGc = false;
}

template <>
void Check<IObjectAllocEventObserver>::Specific(SObjectAllocEventData &d) {
    IdCheck(d, DR_OBJECT_ID, d.objectId, "ObjectAlloc", "objectId");
    IdCheck(d, DR_CLASS_ID, d.classId, "ObjectAlloc", "classId");
    ThreadAlive(d, "ObjectAlloc");
}

template <>
void Check<IMonitorWaitEventObserver>::Specific(SMonitorWaitEventData &d) {
    ThreadAlive(d, "MonitorWait");
    if (d.validData & DR_THREAD_ID) g_check.threads[d.threadId].waiting = {d.objectId, true};
}

template <>
void Check<IMonitorWaitedEventObserver>::Specific(SMonitorWaitedEventData &d) {
    if ((d.validData & DR_THREAD_ID) == 0) return;
    auto &w = g_check.threads[d.threadId].waiting;
    if (!w.second || w.first != d.objectId) {
        g_check.Violation("monitor-order", "MonitorWaited on thread " + std::to_string(d.threadId) +
                                               " without a matching MonitorWait");
    }
    w = {0, false};
}

template <>
void Check<IContendedMonitorEnterEventObserver>::Specific(SContendedMonitorEnterEventData &d) {
    ThreadAlive(d, "ContendedMonitorEnter");
    if (d.validData & DR_THREAD_ID) g_check.threads[d.threadId].contending = {d.objectId, true};
}

template <>
void Check<IContendedMonitorEnteredEventObserver>::Specific(SContendedMonitorEnteredEventData &d) {
    if ((d.validData & DR_THREAD_ID) == 0) return;
    auto &c = g_check.threads[d.threadId].contending;
    if (!c.second || c.first != d.objectId) {
        g_check.Violation("monitor-order", "ContendedMonitorEntered on thread " + std::to_string(d.threadId) +
                                               " without a matching ContendedMonitorEnter");
    }
    c = {0, false};
}

// Events without data.
template <class Observer>
class CheckNoData : public Observer {
public:
    void HandleEvent() override {
        {
            std::lock_guard lock(g_check.mutex());
            g_check.Counted();
            if (g_check.vmShutdown) {
                g_check.Violation("lifecycle", std::string(EventName(Observer::kEventType)) + " raised after VmShutdown");
            }
        }
        Specific();
    }

private:
    void Specific() {}
};

template <>
void CheckNoData<IVmShutdownEventObserver>::Specific() {
    {
        std::lock_guard lock(g_check.mutex());
        if (!g_check.vmInit) g_check.Violation("lifecycle", "VmShutdown without VmInit");
    }
    g_check.Finish();  // data requests are still answered during VmShutdown
    std::lock_guard lock(g_check.mutex());
    g_check.vmShutdown = true;
}

// One observer per catalog event.
#define MARTINI_X_OBSERVER_DATA(Name) Check<I##Name##EventObserver> g_##Name;
#define MARTINI_X_OBSERVER_NODATA(Name) CheckNoData<I##Name##EventObserver> g_##Name;
#define MARTINI_X_OBSERVER(Name, Const, Number, Group, Items, Shape) MARTINI_X_OBSERVER_##Shape(Name)
MARTINI_MPI_EVENTS(MARTINI_X_OBSERVER)
#undef MARTINI_X_OBSERVER
#undef MARTINI_X_OBSERVER_DATA
#undef MARTINI_X_OBSERVER_NODATA

struct Options {
    std::string report;
    std::size_t max = 50;
    bool maxGiven = false;
};

// Every option's name (docs/configuration.md lists them): a name that is none of them
// is refused, with the nearest one.
constexpr const char *kOptionNames[] = {"report", "max"};

// Fills `o` from the option text; "" or the problem.
std::string ParseOptions(const char *text, Options &o) {
    std::vector<martini::clients::Option> items;
    if (std::string e = martini::clients::SplitOptions(text, items); !e.empty()) return e;
    for (const auto &it : items) {
        if (std::string e = martini::clients::CheckOptionName(it.key, kOptionNames); !e.empty()) return e;
        if (it.key == "report") {
            if (it.value.empty()) return "option 'report' needs a file name (report=FILE)";
            o.report = it.value;
        } else if (it.key == "max") {
            if (it.value.empty() || it.value.size() > 9 || it.value.find_first_not_of("0123456789") != std::string::npos) {
                return "option 'max': '" + it.value + "' is not a count";
            }
            o.max = std::stoul(it.value);
            o.maxGiven = true;
        } else {
            return "option '" + it.key + "' is known but not handled";
        }
    }
    return "";
}

}  // namespace

extern "C" API_EXPORT TResult MPICL_Instantiate(IMpi *mpi, TId clientId, const char *szOptions) {
    Options o;
    if (std::string e = ParseOptions(szOptions, o); !e.empty()) {
        std::fprintf(stderr, "conformance: %s\n", e.c_str());
        return MRTE_ERROR_ILLEGAL_ARGUMENT;
    }
    if (!o.report.empty()) g_check.SetReport(o.report);
    if (o.maxGiven) g_check.SetMaxDetails(o.max);
    g_mpi = mpi;
    g_clientId = clientId;
    // Every event the provider supports; NOT_SUPPORTED just means it is not checked.
    unsigned registered = 0;
#define MARTINI_X_REGISTER(Name, Const, Number, Group, Items, Shape)        \
    if (mpi->RegisterEvent(clientId, g_##Name) == MRTE_RESULT_OK) { \
        ++registered;                                               \
    }
    MARTINI_MPI_EVENTS(MARTINI_X_REGISTER)
#undef MARTINI_X_REGISTER
    return registered > 0 ? MRTE_RESULT_OK : MRTE_ERROR_NOT_SUPPORTED;
}

// For `martini run` and `martini attach`: the options checked before the program starts
// (martini/clients/option_names.h).
extern "C" API_EXPORT const char *MPICL_CheckOptions(const char *options) {
    return martini::clients::CheckOptions<Options>(options, ParseOptions);
}
