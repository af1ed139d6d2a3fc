#include "martini/replay/replay_provider.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <stdexcept>

namespace martini::replay {

using namespace Martini::MPI;
using json = nlohmann::json;
using core::Put;

TEventType EventFromName(const std::string &name) {
#define MARTINI_X_NAME(Name, Const, Number, Group, Items, Shape) \
    if (name == #Name) return Const;
    MARTINI_MPI_EVENTS(MARTINI_X_NAME)
#undef MARTINI_X_NAME
    return EV_NONE;
}

namespace {

// A bad record: the message says what is wrong with it.
struct TraceError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

TId Id(const json &rec, const char *field) {
    auto it = rec.find(field);
    if (it == rec.end()) throw TraceError(std::string("missing field \"") + field + "\"");
    if (!it->is_number_unsigned() || it->get<TId>() == 0) {
        throw TraceError(std::string("field \"") + field + "\" must be a positive integer id");
    }
    return it->get<TId>();
}

TId OptionalId(const json &rec, const char *field) {
    return rec.contains(field) ? Id(rec, field) : 0;
}

std::string Text(const json &rec, const char *field, bool required = true) {
    auto it = rec.find(field);
    if (it == rec.end()) {
        if (required) throw TraceError(std::string("missing field \"") + field + "\"");
        return {};
    }
    if (!it->is_string()) throw TraceError(std::string("field \"") + field + "\" must be a string");
    return it->get<std::string>();
}

std::uint64_t Number(const json &rec, const char *field, std::uint64_t fallback) {
    auto it = rec.find(field);
    if (it == rec.end()) return fallback;
    if (!it->is_number_unsigned()) {
        throw TraceError(std::string("field \"") + field + "\" must be a non-negative integer");
    }
    return it->get<std::uint64_t>();
}

bool Flag(const json &rec, const char *field) {
    auto it = rec.find(field);
    if (it == rec.end()) return false;
    if (!it->is_boolean()) throw TraceError(std::string("field \"") + field + "\" must be true or false");
    return it->get<bool>();
}

EMethodAccessType AccessFromName(const std::string &s) {
    if (s.empty() || s == "package_api") return s.empty() ? MAT_NONE : MAT_PACKAGE_API;
    if (s == "package_internal") return MAT_PACKAGE_INTERNAL;
    if (s == "class_internal") return MAT_CLASS_INTERNAL;
    throw TraceError("field \"access\" must be package_api, package_internal or class_internal, not \"" +
                     s + "\"");
}

EObjectArrayType ArrayTypeFromName(const std::string &s) {
    static const std::pair<const char *, EObjectArrayType> kNames[] = {
        {"object", OAT_OBJECT}, {"boolean", OAT_BOOLEAN}, {"byte", OAT_BYTE},
        {"char", OAT_CHAR},     {"short", OAT_SHORT},     {"int", OAT_INT},
        {"long", OAT_LONG},     {"float", OAT_FLOAT},     {"double", OAT_DOUBLE}};
    for (const auto &[name, type] : kNames) {
        if (s == name) return type;
    }
    throw TraceError("field \"array\" must name an element type (object, int, ...), not \"" + s + "\"");
}

EThreadInteractionType InteractionFromName(const std::string &s) {
    static const std::pair<const char *, EThreadInteractionType> kNames[] = {
        {"notify", IT_NOTIFY}, {"notify_all", IT_NOTIFY_ALL}, {"start", IT_START},
        {"join", IT_JOIN},     {"sleep", IT_SLEEP},           {"interrupt", IT_INTERRUPT}};
    for (const auto &[name, type] : kNames) {
        if (s == name) return type;
    }
    throw TraceError("field \"type\" must be notify, notify_all, start, join, sleep or interrupt, not \"" +
                     s + "\"");
}

}  // namespace

// Plays one trace. Holds the per-playback state that is not part of the tables.
class ReplayProvider::Player {
public:
    Player(ReplayProvider &p, core::Core &core) : p_(p), core_(core) {}

    void Record(const json &rec) {
        if (!rec.is_object()) throw TraceError("a record must be a JSON object");
        const std::string name = Text(rec, "event");
        const TEventType event = EventFromName(name);
        if (event == EV_NONE) throw TraceError("unknown event \"" + name + "\"");
        if (shutDown_) throw TraceError("record after VmShutdown");
        now_ = Number(rec, "t", now_ + 1000);  // synthetic clock: 1 us per record
        if (rec.contains("thread")) {
            p_.currentThread_ = Id(rec, "thread");
            // "location": where the thread's innermost frame is now (a call site, an
            // allocation site), so stacks in events and data requests carry it.
            if (rec.contains("location")) {
                auto t = p_.threads_.find(p_.currentThread_);
                if (t != p_.threads_.end() && !t->second.stack.empty()) {
                    t->second.stack.back().location = static_cast<unsigned>(Number(rec, "location", 0));
                }
            }
        }
        switch (event) {
            case EV_VM_INIT: VmInit(rec); break;
            case EV_VM_SHUTDOWN: VmShutdown(); break;
            case EV_MODULE_LOAD: ModuleLoad(rec); break;
            case EV_MODULE_UNLOAD: ModuleUnload(rec); break;
            case EV_CLASS_LOAD: ClassLoad(rec); break;
            case EV_NEW_METHOD: NewMethod(rec); break;
            case EV_JITTED_METHOD_LOADED: JittedMethod(rec, true); break;
            case EV_JITTED_METHOD_UNLOADED: JittedMethod(rec, false); break;
            case EV_DYNAMIC_CODE_GENERATED: DynamicCode(rec); break;
            case EV_METHOD_ENTER: MethodEnter(rec); break;
            case EV_METHOD_LEAVE: MethodLeave(rec); break;
            case EV_THREAD_START: ThreadStart(rec); break;
            case EV_THREAD_END: ThreadEnd(rec); break;
            case EV_OBJECT_ALLOC: ObjectAlloc(rec); break;
            case EV_OBJECT_FREE: ObjectFree(rec); break;
            case EV_GC_START: Gc<IGcStartEventObserver>(); break;
            case EV_GC_END: Gc<IGcEndEventObserver>(); break;
            case EV_GC_MOVED_REFERENCES: MovedReferences(rec); break;
            case EV_MONITOR_WAIT: MonitorWait(rec); break;
            case EV_MONITOR_WAITED: MonitorWaited(rec); break;
            case EV_CONTENDED_MONITOR_ENTER: ContendedEnter(rec); break;
            case EV_CONTENDED_MONITOR_ENTERED: ContendedEntered(rec); break;
            case EV_THREAD_INTERACTION: Interaction(rec); break;
            case EV_EC_START: RaiseNoData<IEcStartEventObserver>(); break;
            case EV_EC_STOP: RaiseNoData<IEcStopEventObserver>(); break;
            case EV_EC_ATTACH: RaiseNoData<IEcAttachEventObserver>(); break;
            case EV_EC_DETACH: RaiseNoData<IEcDetachEventObserver>(); break;
            case EV_EC_SET_OUTPUT_DIRECTORY: OutputDirectory(rec); break;
            case EV_EC_CUSTOM_COMMAND: CustomCommand(rec); break;
            case EV_SAMPLE_HIT: SampleHit(rec); break;
            // No default: a new catalog event fails to compile (-Wswitch) until the
            // replay can play it.
            case EV_NONE:
            case EV_LAST: throw TraceError("unknown event \"" + name + "\"");
        }
    }

    bool started() const { return started_; }
    bool shutDown() const { return shutDown_; }
    void VmShutdown() {
        if (shutDown_) throw TraceError("VmShutdown was already replayed");
        if (!started_) throw TraceError("VmShutdown before VmInit");
        shutDown_ = true;
        ++p_.stats_.eventsRaised;
        core_.Shutdown();
    }

private:
    template <class Observer>
    BitSet Wanted() const {
        return core_.RequestedData(Observer::kEventType);
    }
    template <class Observer>
    void Raise(typename Observer::TEventData &d, ClientMask mask = core::kAllClients) {
        ++p_.stats_.eventsRaised;
        core_.Raise<Observer>(d, mask);
    }
    template <class Observer>
    void RaiseNoData() {
        ++p_.stats_.eventsRaised;
        core_.Raise<Observer>();
    }

    Thread &LiveThread(const json &rec) {
        const TId id = Id(rec, "thread");
        auto it = p_.threads_.find(id);
        if (it == p_.threads_.end()) {
            throw TraceError("thread " + std::to_string(id) + " was not started (no ThreadStart before)");
        }
        if (!it->second.alive) throw TraceError("thread " + std::to_string(id) + " has ended");
        if (rec.contains("cpu")) {
            it->second.cpuNs = Number(rec, "cpu", 0);
            it->second.cpuKnown = true;
        }
        return it->second;
    }
    Class &KnownClass(TId id) {
        auto it = p_.classes_.find(id);
        if (it == p_.classes_.end()) {
            throw TraceError("class " + std::to_string(id) + " was not loaded (no ClassLoad before)");
        }
        return it->second;
    }
    Method &KnownMethod(TId id) {
        auto it = p_.methods_.find(id);
        if (it == p_.methods_.end()) {
            throw TraceError("method " + std::to_string(id) + " was not declared (no NewMethod before)");
        }
        return it->second;
    }

    void VmInit(const json &rec) {
        if (started_) throw TraceError("VmInit was already replayed");
        started_ = true;
        core_.SetLive(true);
        SVmInitEventData d;
        if (const TId thread = OptionalId(rec, "thread"); thread != 0) {
            Put(d, Wanted<IVmInitEventObserver>(), DR_THREAD_ID, d.threadId, thread);
        }
        Raise<IVmInitEventObserver>(d);
    }

    void ModuleLoad(const json &rec) {
        const TId id = Id(rec, "module");
        Module &m = p_.modules_[id];
        m.name = Text(rec, "name");
        SModuleLoadEventData d;
        const BitSet w = Wanted<IModuleLoadEventObserver>();
        Put(d, w, DR_MODULE_ID, d.moduleId, id);
        Put(d, w, DR_MODULE_NAME, d.szModuleName, m.name.c_str());
        Raise<IModuleLoadEventObserver>(d);
    }

    void ModuleUnload(const json &rec) {
        const TId id = Id(rec, "module");
        auto it = p_.modules_.find(id);
        if (it == p_.modules_.end()) throw TraceError("module " + std::to_string(id) + " was not loaded");
        SModuleUnloadEventData d;
        const BitSet w = Wanted<IModuleUnloadEventObserver>();
        Put(d, w, DR_MODULE_ID, d.moduleId, id);
        Put(d, w, DR_MODULE_NAME, d.szModuleName, it->second.name.c_str());
        Raise<IModuleUnloadEventObserver>(d);
        p_.modules_.erase(it);
    }

    void ClassLoad(const json &rec) {
        const TId id = Id(rec, "class");
        if (p_.classes_.count(id) != 0) throw TraceError("class " + std::to_string(id) + " is loaded already");
        Class &c = p_.classes_[id];
        c.name = Text(rec, "name");
        c.sourceFile = Text(rec, "source", false);
        c.moduleId = OptionalId(rec, "module");
        // Instrumentation time for the heap group: the heap filters see the class once.
        SHeapFilterData filterData{c.name.c_str()};
        c.heapInterest = core_.HeapInterest(id, filterData);
        SClassLoadEventData d;
        const BitSet w = Wanted<IClassLoadEventObserver>();
        Put(d, w, DR_CLASS_ID, d.classId, id);
        Put(d, w, DR_CLASS_NAME, d.szClassName, c.name.c_str());
        if (!c.sourceFile.empty()) Put(d, w, DR_SOURCE_FILE_NAME, d.szSourceFileName, c.sourceFile.c_str());
        if (c.moduleId != 0) Put(d, w, DR_MODULE_ID, d.moduleId, c.moduleId);
        if (p_.currentThread_ != 0) Put(d, w, DR_THREAD_ID, d.threadId, p_.currentThread_);
        Raise<IClassLoadEventObserver>(d);
    }

    void NewMethod(const json &rec) {
        const TId id = Id(rec, "method");
        if (p_.methods_.count(id) != 0) throw TraceError("method " + std::to_string(id) + " is declared already");
        const TId classId = Id(rec, "class");
        Class &c = KnownClass(classId);
        Method m;
        m.name = Text(rec, "name");
        m.signature = Text(rec, "sig", false);
        m.classId = classId;
        m.access = AccessFromName(Text(rec, "access", false));
        if (auto it = rec.find("lines"); it != rec.end()) {
            if (!it->is_array()) throw TraceError("field \"lines\" must be [[offset, line], ...]");
            for (const auto &pair : *it) {
                if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number_unsigned() ||
                    !pair[1].is_number_unsigned()) {
                    throw TraceError("field \"lines\" must be [[offset, line], ...]");
                }
                m.lines.push_back({pair[0].get<unsigned>(), pair[1].get<unsigned>()});
            }
            std::sort(m.lines.begin(), m.lines.end(),
                      [](const auto &a, const auto &b) { return a.uiOffset < b.uiOffset; });
        }
        // Instrumentation time for the call graph: each client's filter sees the
        // method once; a method nobody wants is never raised.
        SCallGraphFilterData filterData{c.name.c_str(), m.name.c_str(), m.signature.c_str(), m.access};
        m.callGraphInterest = core_.CallGraphInterest(id, filterData);
        ++p_.stats_.methods;
        if (m.callGraphInterest == 0) ++p_.stats_.methodsNotInstrumented;
        c.methods.push_back(id);
        const Method &stored = p_.methods_.emplace(id, std::move(m)).first->second;

        SNewMethodEventData d;
        const BitSet w = Wanted<INewMethodEventObserver>();
        Put(d, w, DR_METHOD_ID, d.methodId, id);
        Put(d, w, DR_METHOD_NAME, d.szMethodName, stored.name.c_str());
        if (!stored.signature.empty()) Put(d, w, DR_METHOD_SIGNATURE, d.szMethodSig, stored.signature.c_str());
        if (stored.access != MAT_NONE) Put(d, w, DR_METHOD_ACCESS_TYPE, d.methodAccessType, stored.access);
        Put(d, w, DR_CLASS_ID, d.classId, classId);
        Put(d, w, DR_CLASS_NAME, d.szClassName, c.name.c_str());
        if (!c.sourceFile.empty()) Put(d, w, DR_SOURCE_FILE_NAME, d.szSourceFileName, c.sourceFile.c_str());
        if (c.moduleId != 0) Put(d, w, DR_MODULE_ID, d.moduleId, c.moduleId);
        if (w & DR_METHOD_LINE_NUMBERS) {
            d.lineNumbers.entries = const_cast<SLineNumberTableEntry *>(stored.lines.data());
            d.lineNumbers.uiSize = d.lineNumbers.uiActualSize = static_cast<unsigned>(stored.lines.size());
            d.validData |= DR_METHOD_LINE_NUMBERS;
        }
        Raise<INewMethodEventObserver>(d);
    }

    void JittedMethod(const json &rec, bool loaded) {
        const TId id = Id(rec, "method");
        Method &m = KnownMethod(id);
        if (loaded) {
            m.codeAddress = Number(rec, "address", 0);
            m.codeSize = static_cast<unsigned>(Number(rec, "size", 0));
            p_.code_[m.codeAddress] = id;
        } else {
            p_.code_.erase(m.codeAddress);
        }
        auto fill = [&](auto &d, BitSet w) {
            Put(d, w, DR_METHOD_ID, d.methodId, id);
            if (w & DR_METHOD_CODE) {
                d.uiCodeAddress = m.codeAddress;
                Put(d, w, DR_METHOD_CODE, d.uiCodeSize, m.codeSize);
            }
        };
        if (loaded) {
            SJittedMethodLoadedEventData d;
            fill(d, Wanted<IJittedMethodLoadedEventObserver>());
            Raise<IJittedMethodLoadedEventObserver>(d);
        } else {
            SJittedMethodUnloadedEventData d;
            fill(d, Wanted<IJittedMethodUnloadedEventObserver>());
            Raise<IJittedMethodUnloadedEventObserver>(d);
            m.codeAddress = 0;
            m.codeSize = 0;
        }
    }

    void DynamicCode(const json &rec) {
        const std::string name = Text(rec, "name");
        const UIOP address = Number(rec, "address", 0);
        const auto size = static_cast<unsigned>(Number(rec, "size", 0));
        SDynamicCodeGeneratedEventData d;
        const BitSet w = Wanted<IDynamicCodeGeneratedEventObserver>();
        Put(d, w, DR_CODE_NAME, d.szCodeName, name.c_str());
        if (w & DR_METHOD_CODE) {
            d.uiCodeAddress = address;
            Put(d, w, DR_METHOD_CODE, d.uiCodeSize, size);
        }
        Raise<IDynamicCodeGeneratedEventObserver>(d);
    }

    template <class Data>
    void FillCallData(Data &d, BitSet w, TId methodId, const Thread &t) {
        Put(d, w, DR_METHOD_ID, d.methodId, methodId);
        Put(d, w, DR_THREAD_ID, d.threadId, p_.currentThread_);
        Put(d, w, DR_CPU_TIMESTAMP, d.uiCpuTimestamp, now_);
        if (t.cpuKnown) Put(d, w, DR_THREAD_CPU_TIME, d.uiThreadCpuTime, t.cpuNs);
    }

    void MethodEnter(const json &rec) {
        Thread &t = LiveThread(rec);
        const TId id = Id(rec, "method");
        const Method &m = KnownMethod(id);
        t.stack.push_back({id, kUnknownLocation});
        if (m.callGraphInterest == 0) {
            ++p_.stats_.callsNotInstrumented;
            return;
        }
        SMethodEnterEventData d;
        FillCallData(d, Wanted<IMethodEnterEventObserver>(), id, t);
        Raise<IMethodEnterEventObserver>(d, m.callGraphInterest);
    }

    void MethodLeave(const json &rec) {
        Thread &t = LiveThread(rec);
        if (t.stack.empty()) throw TraceError("MethodLeave on a thread with no method entered");
        const TId id = t.stack.back().methodId;
        if (rec.contains("method") && Id(rec, "method") != id) {
            throw TraceError("MethodLeave of method " + std::to_string(Id(rec, "method")) +
                             " but the innermost entered method is " + std::to_string(id));
        }
        const Method &m = KnownMethod(id);
        if (m.callGraphInterest != 0) {
            SMethodLeaveEventData d;
            FillCallData(d, Wanted<IMethodLeaveEventObserver>(), id, t);
            d.bIsExceptionExit = Flag(rec, "exception");
            Raise<IMethodLeaveEventObserver>(d, m.callGraphInterest);
        }
        t.stack.pop_back();
    }

    void ThreadStart(const json &rec) {
        const TId id = Id(rec, "thread");
        if (auto it = p_.threads_.find(id); it != p_.threads_.end() && it->second.alive) {
            throw TraceError("thread " + std::to_string(id) + " is started already");
        }
        Thread &t = p_.threads_[id];
        t = Thread{};
        t.name = Text(rec, "name", false);
        t.group = Text(rec, "group", false);
        t.parentId = OptionalId(rec, "parent");
        t.objectId = OptionalId(rec, "object");
        SThreadStartEventData d;
        const BitSet w = Wanted<IThreadStartEventObserver>();
        Put(d, w, DR_THREAD_ID, d.threadId, id);
        Put(d, w, DR_THREAD_NAME, d.szThreadName, t.name.c_str());
        Put(d, w, DR_THREAD_GROUP, d.szThreadGroupName, t.group.c_str());
        if (t.parentId != 0) Put(d, w, DR_THREAD_PARENT_ID, d.parentThreadId, t.parentId);
        if (t.objectId != 0) Put(d, w, DR_OBJECT_ID, d.threadObjectId, t.objectId);
        Put(d, w, DR_CPU_TIMESTAMP, d.uiCpuTimestamp, now_);
        Raise<IThreadStartEventObserver>(d);
    }

    void ThreadEnd(const json &rec) {
        Thread &t = LiveThread(rec);
        if (!t.stack.empty()) {
            throw TraceError("thread " + std::to_string(p_.currentThread_) + " ended with " +
                             std::to_string(t.stack.size()) + " method(s) not left");
        }
        SThreadEndEventData d;
        const BitSet w = Wanted<IThreadEndEventObserver>();
        Put(d, w, DR_THREAD_ID, d.threadId, p_.currentThread_);
        Put(d, w, DR_CPU_TIMESTAMP, d.uiCpuTimestamp, now_);
        Raise<IThreadEndEventObserver>(d);
        t.alive = false;
        t.state = TS_TERMINATED;
    }

    void ObjectAlloc(const json &rec) {
        Thread &t = LiveThread(rec);
        const TId id = Id(rec, "object");
        const TId classId = Id(rec, "class");
        Class &c = KnownClass(classId);
        Object &o = p_.objects_[id];
        o = Object{};
        o.classId = classId;
        o.size = Number(rec, "size", 0);
        if (rec.contains("array")) {
            o.arrayInfo.arrayType = ArrayTypeFromName(Text(rec, "array"));
            o.arrayInfo.uiNumElements = static_cast<unsigned>(Number(rec, "length", 0));
        }
        if (auto it = rec.find("refs"); it != rec.end()) {
            if (!it->is_array()) throw TraceError("field \"refs\" must be an array of object ids");
            for (const auto &ref : *it) {
                if (!ref.is_number_unsigned() || ref.get<TId>() == 0) {
                    throw TraceError("field \"refs\" must be an array of positive object ids");
                }
                o.references.push_back(ref.get<TId>());
            }
        }
        const auto location = static_cast<unsigned>(Number(rec, "location", 0));
        if (c.heapInterest == 0) return;
        SObjectAllocEventData d;
        const BitSet w = Wanted<IObjectAllocEventObserver>();
        Put(d, w, DR_THREAD_ID, d.threadId, p_.currentThread_);
        Put(d, w, DR_OBJECT_ID, d.objectId, id);
        Put(d, w, DR_CLASS_ID, d.classId, classId);
        Put(d, w, DR_OBJECT_SIZE, d.uiObjectSize, o.size);
        Put(d, w, DR_ARRAY_INFO, d.arrayInfo, o.arrayInfo);
        if (!t.stack.empty()) {
            if (w & DR_ALLOC_LOCATION) {
                d.allocMethodId = t.stack.back().methodId;
                Put(d, w, DR_ALLOC_LOCATION, d.uiAllocLocation, location);
            }
        }
        if (w & DR_VM_CALL_STACK) {
            p_.StackOf(t, 0, stack_);
            d.stackTrace.entries = stack_.data();
            d.stackTrace.uiSize = d.stackTrace.uiActualSize = static_cast<unsigned>(stack_.size());
            d.validData |= DR_VM_CALL_STACK;
        }
        Put(d, w, DR_CPU_TIMESTAMP, d.uiCpuTimestamp, now_);
        Raise<IObjectAllocEventObserver>(d, c.heapInterest);
    }

    void ObjectFree(const json &rec) {
        const TId id = Id(rec, "object");
        auto it = p_.objects_.find(id);
        if (it == p_.objects_.end()) throw TraceError("object " + std::to_string(id) + " was not allocated");
        const Object o = it->second;
        p_.objects_.erase(it);
        const Class &c = KnownClass(o.classId);
        if (c.heapInterest == 0) return;
        SObjectFreeEventData d;
        const BitSet w = Wanted<IObjectFreeEventObserver>();
        Put(d, w, DR_OBJECT_ID, d.objectId, id);
        Put(d, w, DR_CLASS_ID, d.classId, o.classId);
        Put(d, w, DR_OBJECT_SIZE, d.uiObjectSize, o.size);
        Raise<IObjectFreeEventObserver>(d, c.heapInterest);
    }

    template <class Observer>
    void Gc() {
        typename Observer::TEventData d;
        Put(d, Wanted<Observer>(), DR_CPU_TIMESTAMP, d.uiCpuTimestamp, now_);
        Raise<Observer>(d);
    }

    void MovedReferences(const json &rec) {
        auto it = rec.find("moved");
        if (it == rec.end() || !it->is_array()) throw TraceError("field \"moved\" must be [[old, new], ...]");
        std::vector<SMovedReference> moved;
        for (const auto &pair : *it) {
            if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number_unsigned() ||
                !pair[1].is_number_unsigned() || pair[0].get<TId>() == 0 || pair[1].get<TId>() == 0) {
                throw TraceError("field \"moved\" must be [[old, new], ...] with positive object ids");
            }
            moved.push_back({pair[0].get<TId>(), pair[1].get<TId>()});
        }
        for (const auto &m : moved) {
            if (auto o = p_.objects_.find(m.oldObjectId); o != p_.objects_.end()) {
                Object obj = std::move(o->second);
                p_.objects_.erase(o);
                p_.objects_[m.newObjectId] = std::move(obj);
            }
        }
        SGcMovedReferencesEventData d;
        if (Wanted<IGcMovedReferencesEventObserver>() & DR_MOVED_REFERENCES) {
            d.movedReferences.entries = moved.data();
            d.movedReferences.uiSize = d.movedReferences.uiActualSize = static_cast<unsigned>(moved.size());
            d.validData |= DR_MOVED_REFERENCES;
        }
        Raise<IGcMovedReferencesEventObserver>(d);
    }

    // The monitor's object and its class: from the object table, or from the record's
    // "class" field for objects the trace never allocated.
    std::pair<TId, TId> MonitorObject(const json &rec) {
        const TId object = Id(rec, "object");
        TId classId = OptionalId(rec, "class");
        if (auto it = p_.objects_.find(object); it != p_.objects_.end()) classId = it->second.classId;
        if (classId == 0) {
            throw TraceError("object " + std::to_string(object) +
                             " was not allocated; give its \"class\" in the record");
        }
        return {object, classId};
    }

    ClientMask MonitorInterest(TId classId) {
        Class &c = KnownClass(classId);
        if (!c.monitorInterestKnown) {
            SMonitorFilterData filterData{c.name.c_str()};
            c.monitorInterest = core_.MonitorInterest(classId, filterData);
            c.monitorInterestKnown = true;
        }
        return c.monitorInterest;
    }

    template <class Data>
    ClientMask FillMonitor(Data &d, BitSet w, const json &rec) {
        LiveThread(rec);
        const auto [object, classId] = MonitorObject(rec);
        Put(d, w, DR_THREAD_ID, d.threadId, p_.currentThread_);
        Put(d, w, DR_OBJECT_ID, d.objectId, object);
        Put(d, w, DR_CLASS_ID, d.classId, classId);
        Put(d, w, DR_CPU_TIMESTAMP, d.uiCpuTimestamp, now_);
        return MonitorInterest(classId);
    }

    void MonitorWait(const json &rec) {
        SMonitorWaitEventData d;
        const BitSet w = Wanted<IMonitorWaitEventObserver>();
        const ClientMask mask = FillMonitor(d, w, rec);
        Put(d, w, DR_MONITOR_TIMEOUT, d.timeoutMs, static_cast<std::int64_t>(Number(rec, "timeout", 0)));
        p_.threads_[p_.currentThread_].state = Number(rec, "timeout", 0) > 0 ? TS_TIMED_WAITING : TS_WAITING;
        if (mask != 0) Raise<IMonitorWaitEventObserver>(d, mask);
    }

    void MonitorWaited(const json &rec) {
        SMonitorWaitedEventData d;
        const BitSet w = Wanted<IMonitorWaitedEventObserver>();
        const ClientMask mask = FillMonitor(d, w, rec);
        Put(d, w, DR_MONITOR_TIMEOUT, d.bTimedOut, Flag(rec, "timed_out"));
        p_.threads_[p_.currentThread_].state = TS_RUNNING;
        if (mask != 0) Raise<IMonitorWaitedEventObserver>(d, mask);
    }

    void ContendedEnter(const json &rec) {
        SContendedMonitorEnterEventData d;
        const BitSet w = Wanted<IContendedMonitorEnterEventObserver>();
        const ClientMask mask = FillMonitor(d, w, rec);
        if (rec.contains("owner")) Put(d, w, DR_MONITOR_OWNER_THREAD_ID, d.ownerThreadId, Id(rec, "owner"));
        p_.threads_[p_.currentThread_].state = TS_BLOCKED;
        if (mask != 0) Raise<IContendedMonitorEnterEventObserver>(d, mask);
    }

    void ContendedEntered(const json &rec) {
        SContendedMonitorEnteredEventData d;
        const ClientMask mask = FillMonitor(d, Wanted<IContendedMonitorEnteredEventObserver>(), rec);
        p_.threads_[p_.currentThread_].state = TS_RUNNING;
        if (mask != 0) Raise<IContendedMonitorEnteredEventObserver>(d, mask);
    }

    void Interaction(const json &rec) {
        Thread &t = LiveThread(rec);
        const EThreadInteractionType type = InteractionFromName(Text(rec, "type"));
        // The call site is the innermost method on the thread; its filter answer is
        // cached by that method's id (0: no managed frame).
        TId site = 0;
        SThreadInteractionFilterData filterData{"", "", ""};
        if (!t.stack.empty()) {
            site = t.stack.back().methodId;
            const Method &m = KnownMethod(site);
            filterData = {KnownClass(m.classId).name.c_str(), m.name.c_str(), m.signature.c_str()};
        }
        std::pair<TId, TId> target{0, 0};
        if (rec.contains("object")) target = MonitorObject(rec);
        const ClientMask mask = core_.ThreadInteractionInterest(site, filterData);
        if (mask == 0) return;
        SThreadInteractionEventData d;
        const BitSet w = Wanted<IThreadInteractionEventObserver>();
        Put(d, w, DR_THREAD_ID, d.threadId, p_.currentThread_);
        if (target.first != 0) {
            Put(d, w, DR_OBJECT_ID, d.objectId, target.first);
            Put(d, w, DR_CLASS_ID, d.classId, target.second);
        }
        Put(d, w, DR_INTERACTION_TYPE, d.interactionType, type);
        Put(d, w, DR_CPU_TIMESTAMP, d.uiCpuTimestamp, now_);
        Raise<IThreadInteractionEventObserver>(d, mask);
    }

    void OutputDirectory(const json &rec) {
        const std::string dir = Text(rec, "dir");
        SEcSetOutputDirectoryEventData d;
        Put(d, Wanted<IEcSetOutputDirectoryEventObserver>(), DR_COMMAND, d.szDirectoryName, dir.c_str());
        Raise<IEcSetOutputDirectoryEventObserver>(d);
    }

    void CustomCommand(const json &rec) {
        const std::string data = Text(rec, "data", false);
        const auto commandId = static_cast<unsigned>(Number(rec, "id", 0));
        SEcCustomCommandEventData d;
        const BitSet w = Wanted<IEcCustomCommandEventObserver>();
        if (w & DR_COMMAND) {
            d.uiCommandId = commandId;
            d.szCommandData = data.c_str();
            d.validData |= DR_COMMAND;
        }
        Raise<IEcCustomCommandEventObserver>(d);
    }

    void SampleHit(const json &rec) {
        const Thread &t = LiveThread(rec);
        SSampleHitEventData d;
        const BitSet w = Wanted<ISampleHitEventObserver>();
        Put(d, w, DR_THREAD_ID, d.threadId, p_.currentThread_);
        if ((w & DR_VM_CALL_STACK) && rec.value("walked", true)) {  // "walked": false: a sample the runtime could not walk
            p_.StackOf(t, 0, stack_);
            d.stackTrace.entries = stack_.data();
            d.stackTrace.uiSize = d.stackTrace.uiActualSize = static_cast<unsigned>(stack_.size());
            d.validData |= DR_VM_CALL_STACK;
        }
        Put(d, w, DR_CPU_TIMESTAMP, d.uiCpuTimestamp, now_);
        Raise<ISampleHitEventObserver>(d);
    }

    ReplayProvider &p_;
    core::Core &core_;
    std::uint64_t now_ = 0;
    bool started_ = false;
    bool shutDown_ = false;
    std::vector<SStackEntry> stack_;  // reused for event stacks
};

std::string ReplayProvider::Play(core::Core &core, std::istream &in, const std::string &sourceName) {
    Player player(*this, core);
    std::string line;
    std::uint64_t lineNo = 0;
    std::string error;
    while (std::getline(in, line)) {
        ++lineNo;
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        if (line[line.find_first_not_of(" \t")] == '#') continue;  // comment line
        ++stats_.records;
        try {
            player.Record(json::parse(line));
        } catch (const json::exception &e) {
            error = e.what();
        } catch (const TraceError &e) {
            error = e.what();
        }
        if (!error.empty()) {
            error = sourceName + ":" + std::to_string(lineNo) + ": " + error;
            break;
        }
    }
    if (player.started() && !player.shutDown()) player.VmShutdown();
    return error;
}

// ---- Provider: what the trace declared -------------------------------------------

core::RuntimeDescription ReplayProvider::Describe() const {
    return {RT_REPLAY, "Martini replay", std::to_string(MARTINI_MPI_VERSION_MAJOR) + "." +
                                             std::to_string(MARTINI_MPI_VERSION_MINOR)};
}

bool ReplayProvider::CanRaise(TEventType event) const noexcept {
    return event > EV_NONE && event < EV_LAST;  // a trace can hold every event
}

const ReplayProvider::Method *ReplayProvider::FindMethod(TId id) const {
    auto it = methods_.find(id);
    return it == methods_.end() ? nullptr : &it->second;
}

const ReplayProvider::Thread *ReplayProvider::FindThread(TId id) const {
    auto it = threads_.find(id);
    return it == threads_.end() ? nullptr : &it->second;
}

unsigned ReplayProvider::LineFor(const Method &m, unsigned location) const {
    if (location == kUnknownLocation) return 0;
    unsigned line = 0;
    for (const auto &entry : m.lines) {
        if (entry.uiOffset > location) break;
        line = entry.uiLineNumber;
    }
    if (line == 0 && !m.lines.empty()) line = m.lines.front().uiLineNumber;
    return line;
}

void ReplayProvider::StackOf(const Thread &t, unsigned maxFrames, std::vector<SStackEntry> &out) const {
    out.clear();
    for (auto it = t.stack.rbegin(); it != t.stack.rend(); ++it) {
        if (maxFrames != 0 && out.size() == maxFrames) break;
        const Method *m = FindMethod(it->methodId);
        out.push_back({it->methodId, it->location, m ? LineFor(*m, it->location) : 0});
    }
}

TResult ReplayProvider::DescribeModule(TId id, BitSet, core::ModuleFacts &f) noexcept {
    auto it = modules_.find(id);
    if (it == modules_.end()) return MRTE_ERROR_ILLEGAL_ID;
    f.name = it->second.name;
    f.given = DR_MODULE_NAME;
    return MRTE_RESULT_OK;
}

TResult ReplayProvider::DescribeClass(TId id, BitSet, core::ClassFacts &f) noexcept {
    auto it = classes_.find(id);
    if (it == classes_.end()) return MRTE_ERROR_ILLEGAL_ID;
    const Class &c = it->second;
    f.name = c.name;
    f.methods = c.methods;
    f.given = DR_CLASS_NAME | DR_CLASS_METHODS;
    if (!c.sourceFile.empty()) {
        f.sourceFile = c.sourceFile;
        f.given |= DR_SOURCE_FILE_NAME;
    }
    if (c.moduleId != 0) {
        f.moduleId = c.moduleId;
        f.given |= DR_MODULE_ID;
    }
    return MRTE_RESULT_OK;
}

TResult ReplayProvider::DescribeMethod(TId id, BitSet, core::MethodFacts &f) noexcept {
    const Method *m = FindMethod(id);
    if (m == nullptr) return MRTE_ERROR_ILLEGAL_ID;
    const Class &c = classes_.at(m->classId);
    f.name = m->name;
    f.signature = m->signature;
    f.className = c.name;
    f.classId = m->classId;
    f.accessType = m->access;
    f.lines = m->lines;
    f.given = DR_METHOD_NAME | DR_CLASS_NAME | DR_CLASS_ID | DR_METHOD_LINE_NUMBERS;
    if (!m->signature.empty()) f.given |= DR_METHOD_SIGNATURE;
    if (m->access != MAT_NONE) f.given |= DR_METHOD_ACCESS_TYPE;
    if (!c.sourceFile.empty()) {
        f.sourceFile = c.sourceFile;
        f.given |= DR_SOURCE_FILE_NAME;
    }
    if (c.moduleId != 0) {
        f.moduleId = c.moduleId;
        f.given |= DR_MODULE_ID;
    }
    if (m->codeAddress != 0) {
        f.codeAddress = m->codeAddress;
        f.codeSize = m->codeSize;
        f.given |= DR_METHOD_CODE;
    }
    return MRTE_RESULT_OK;
}

TResult ReplayProvider::DescribeObject(TId id, BitSet, core::ObjectFacts &f) noexcept {
    auto it = objects_.find(id);
    if (it == objects_.end()) return MRTE_ERROR_ILLEGAL_ID;
    f.classId = it->second.classId;
    f.size = it->second.size;
    f.arrayInfo = it->second.arrayInfo;
    f.given = DR_CLASS_ID | DR_OBJECT_SIZE | DR_ARRAY_INFO;
    return MRTE_RESULT_OK;
}

TResult ReplayProvider::DescribeThread(TId id, BitSet requested, unsigned maxFrames,
                                       core::ThreadFacts &f) noexcept {
    const Thread *t = FindThread(id);
    if (t == nullptr) return MRTE_ERROR_ILLEGAL_ID;
    f.name = t->name;
    f.group = t->group;
    f.state = t->state;
    f.given = DR_THREAD_NAME | DR_THREAD_GROUP | DR_THREAD_STATE;
    if (t->parentId != 0) {
        f.parentThreadId = t->parentId;
        f.given |= DR_THREAD_PARENT_ID;
    }
    if (t->objectId != 0) {
        f.threadObjectId = t->objectId;
        f.given |= DR_OBJECT_ID;
    }
    if (t->cpuKnown) {
        f.cpuTimeNs = t->cpuNs;
        f.given |= DR_THREAD_CPU_TIME;
    }
    if (requested & DR_VM_CALL_STACK) {
        StackOf(*t, maxFrames, f.stack);
        f.stackDepth = t->stack.size();
        f.given |= DR_VM_CALL_STACK;
    }
    return MRTE_RESULT_OK;
}

TResult ReplayProvider::ListThreads(std::vector<TId> &out) noexcept {
    out.clear();
    for (const auto &[id, t] : threads_) {
        if (t.alive) out.push_back(id);
    }
    return MRTE_RESULT_OK;
}

TResult ReplayProvider::DescribeObjectReferences(TId id, BitSet, core::ObjectReferenceFacts &f) noexcept {
    auto it = objects_.find(id);
    if (it == objects_.end()) return MRTE_ERROR_ILLEGAL_ID;
    f.references = it->second.references;
    f.given = DR_OBJECT_REFERENCES;
    return MRTE_RESULT_OK;
}

TResult ReplayProvider::DescribeCompiledCode(UIOP address, BitSet, core::CompiledMethodFacts &f) noexcept {
    auto it = code_.upper_bound(address);
    if (it == code_.begin()) return MRTE_ERROR_ILLEGAL_ID;
    --it;
    const Method *m = FindMethod(it->second);
    if (m == nullptr || address >= m->codeAddress + m->codeSize) return MRTE_ERROR_ILLEGAL_ID;
    f.methodId = it->second;
    f.codeAddress = m->codeAddress;
    f.codeSize = m->codeSize;
    // A replayed method's code maps offsets 1:1 onto its line table's offsets.
    f.location = static_cast<unsigned>(address - m->codeAddress);
    f.lineNumber = LineFor(*m, f.location);
    f.given = DR_METHOD_ID | DR_METHOD_CODE | (f.lineNumber != 0 ? DR_LINE_NUMBER : 0);
    return MRTE_RESULT_OK;
}

TResult ReplayProvider::CurrentThread(TId &id) noexcept {
    if (currentThread_ == 0) return MRTE_ERROR_FAIL;
    id = currentThread_;
    return MRTE_RESULT_OK;
}

// Playback is one thread: suspending "the VM" only records that it happened.
TResult ReplayProvider::SuspendAll() noexcept {
    if (suspended_) return MRTE_ERROR_FAIL;
    suspended_ = true;
    return MRTE_RESULT_OK;
}

TResult ReplayProvider::ResumeAll() noexcept {
    if (!suspended_) return MRTE_ERROR_FAIL;
    suspended_ = false;
    return MRTE_RESULT_OK;
}

TResult ReplayProvider::RunGc() noexcept {
    ++gcRequests_;
    return MRTE_RESULT_OK;
}

}  // namespace martini::replay
