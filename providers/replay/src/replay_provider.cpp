#include "martini/replay/replay_provider.h"

#include "trace_fields.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <stdexcept>

namespace martini::replay {

using namespace Martini::MPI;
using json = nlohmann::json;
using core::Put;
using namespace trace;

TEventType EventFromName(const std::string &name) {
#define MARTINI_X_NAME(Name, Const, Number, Group, Items, Shape) \
    if (name == #Name) return Const;
    MARTINI_MPI_EVENTS(MARTINI_X_NAME)
#undef MARTINI_X_NAME
    return EV_NONE;
}


// Plays one trace. Holds the per-playback state that is not part of the tables.
class ReplayProvider::Player {
public:
    Player(ReplayProvider &p, core::Run &run, core::Core &core) : p_(p), run_(run), core_(core) {}

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
        run_.End();
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
        ++p_.stats_.eventsRaised;
        run_.GoLive(OptionalId(rec, "thread"));
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
    core::Run &run_;
    core::Core &core_;
    std::uint64_t now_ = 0;
    bool started_ = false;
    bool shutDown_ = false;
    std::vector<SStackEntry> stack_;  // reused for event stacks
};

std::string ReplayProvider::Play(core::Core &core, std::istream &in, const std::string &sourceName) {
    core::Run run(core);
    return Play(run, core, in, sourceName);
}

std::string ReplayProvider::Play(core::Run &run, core::Core &core, std::istream &in, const std::string &sourceName) {
    Player player(*this, run, core);
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

}  // namespace martini::replay
