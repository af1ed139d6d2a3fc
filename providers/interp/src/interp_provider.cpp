#include "interp_provider.h"

#include "martini/core/log.h"

#include "martini/core/client_spec.h"
#include "martini/core/clock.h"

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace martini::interp {

using namespace Martini::MPI;
using core::Put;

namespace {

// Per OS thread, keyed by the provider's generation, not its address (a new provider
// may be made where an old one was freed):
//   os:      the OS thread's own record (martini_enter without _vt);
//   current: the thread whose event is being raised here, what GetCurrentThreadId
//            answers inside a handler, and whose stack a data request may read;
//   lastHandle, lastVirtual: the virtual thread this OS thread looked up last.
struct OsThreadSlot {
    std::uint64_t generation = 0;
    ThreadRecord *os = nullptr;
    const ThreadRecord *current = nullptr;
    martini_vthread lastHandle = 0;
    ThreadRecord *lastVirtual = nullptr;
};
// initial-exec: an access is the thread pointer plus an offset, not a __tls_get_addr
// call (the library is small enough for the static TLS surplus even when dlopened).
thread_local OsThreadSlot tOsThread __attribute__((tls_model("initial-exec")));

std::uint64_t ThreadCpuNs() {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return std::uint64_t(ts.tv_sec) * 1000000000u + std::uint64_t(ts.tv_nsec);
}

EMethodAccessType AccessOf(std::uint32_t flags) {
    if (flags & MARTINI_METHOD_PRIVATE) return MAT_CLASS_INTERNAL;
    if (flags & MARTINI_METHOD_INTERNAL) return MAT_PACKAGE_INTERNAL;
    return MAT_PACKAGE_API;
}

}  // namespace

namespace {
std::atomic<std::uint64_t> gGenerations{0};
}  // namespace

InterpProvider::InterpProvider(std::string runtimeName, std::string runtimeVersion)
    : runtimeName_(std::move(runtimeName)),
      runtimeVersion_(std::move(runtimeVersion)),
      generation_(++gGenerations) {}

InterpProvider::~InterpProvider() {
    Shutdown();
}

std::string InterpProvider::Start(const martini_config &config) {
    core_ = std::make_unique<core::Core>(*this);
    run_ = std::make_unique<core::Run>(*core_);
    const core::Run::Loaded loaded = run_->Load(config.clients ? config.clients : "",
                                                core::DirectoryOf(&gGenerations), {}, config.client_path);
    if (loaded.refusal != core::Run::Refusal::kNone) {
        run_.reset();
        core_.reset();
        switch (loaded.refusal) {
        case core::Run::Refusal::kBadConfig: return "bad client list: " + loaded.message;
        case core::Run::Refusal::kNoneLoaded: return loaded.message + " (see the messages above)";
        default: return loaded.message;
        }
    }
    if (config.output_dir != nullptr) run_->SetOutputDirectory(config.output_dir);
    core_->FinishInit();
    enterWanted_ = core_->RequestedData(EV_METHOD_ENTER);
    leaveWanted_ = core_->RequestedData(EV_METHOD_LEAVE);

    // The calling thread is the first: VmInit names it, then it is announced.
    ThreadRecord *main;
    {
        std::lock_guard lock(mutex_);
        main = NewThread(config.main_thread_name ? config.main_thread_name : "main", 0, 0);
    }
    tOsThread = {generation_, main, main, 0, nullptr};
    live_.store(true, std::memory_order_release);
    run_->GoLive(main->id);
    AnnounceThread(*main);
    if (std::string e = channel_.Start(*core_, this); !e.empty()) {
        core::LogLine(e + "; `martini control` will not reach this interpreter");
    }
    return "";
}

void InterpProvider::Shutdown() {
    channel_.Stop();
    if (!live_.exchange(false, std::memory_order_acq_rel)) return;
    run_->End();
}

core::ControlReply InterpProvider::Control(const std::vector<std::string> &words) {
    std::lock_guard lock(controlMutex_);
    if (!Live()) {
        core::ControlReply r;
        r.message = "the run has ended (martini_interp_shutdown was called)";
        return r;
    }
    return core::RunControlCommand(*core_, this, words);
}

std::string InterpProvider::Detach(core::Core &, std::vector<std::string> &) noexcept {
    run_->Detach();  // a second time does nothing
    return "";
}

const ThreadRecord *InterpProvider::Current() const noexcept {
    return tOsThread.generation == generation_ ? tOsThread.current : nullptr;
}

void InterpProvider::SetCurrent(const ThreadRecord *t) noexcept {
    if (tOsThread.generation != generation_) tOsThread = {generation_, nullptr, nullptr, 0, nullptr};
    tOsThread.current = t;
}

// ---- Methods ----------------------------------------------------------------------

martini_status InterpProvider::RegisterMethod(martini_method_id id, const martini_method_info &info,
                                              std::vector<SLineNumberTableEntry> lines, std::string &error) {
    const std::string className =
        info.class_name != nullptr && info.class_name[0] != '\0' ? info.class_name : "(global)";

    std::unique_lock lock(mutex_);
    if (auto found = registered_.find(id); found != registered_.end()) {
        const MethodRecord &old = *found->second;
        if (old.name == info.name && classes_[old.classId - 1].name == className) return MARTINI_OK;
        error = "method id " + std::to_string(id) + " is already " + classes_[old.classId - 1].name + "." +
                old.name + ", not " + className + "." + info.name;
        return MARTINI_E_DUPLICATE_ID;
    }
    MethodRecord &m = methodStore_.emplace_back();
    registered_.emplace(id, &m);
    m.id = id;
    m.name = info.name;
    m.signature = info.signature ? info.signature : "";
    m.sourceFile = info.source_file ? info.source_file : "";
    m.flags = info.flags;
    m.lines = std::move(lines);

    bool newClass = false;
    auto [cls, inserted] = classByName_.try_emplace(className, 0);
    if (inserted) {
        classes_.push_back({className, m.sourceFile, {}});
        cls->second = classes_.size();
        newClass = true;
    }
    m.classId = cls->second;
    ClassRecord &record = classes_[m.classId - 1];
    record.methods.push_back(id);
    if (record.sourceFile.empty()) record.sourceFile = m.sourceFile;
    // Copies: other threads may register methods of the class once the lock is gone.
    const ClassRecord c{record.name, record.sourceFile, {}};
    lock.unlock();

    // Events and filters outside the lock: handlers may make data requests.
    const ThreadRecord *caller = Current();
    if (newClass && core_->IsEnabled(EV_CLASS_LOAD)) {
        SClassLoadEventData d;
        const BitSet w = core_->RequestedData(EV_CLASS_LOAD);
        Put(d, w, DR_CLASS_ID, d.classId, m.classId);
        Put(d, w, DR_CLASS_NAME, d.szClassName, c.name.c_str());
        if (!c.sourceFile.empty()) Put(d, w, DR_SOURCE_FILE_NAME, d.szSourceFileName, c.sourceFile.c_str());
        if (caller != nullptr) Put(d, w, DR_THREAD_ID, d.threadId, caller->id);
        core_->Raise<IClassLoadEventObserver>(d);
    }
    if (core_->IsEnabled(EV_NEW_METHOD)) {
        SNewMethodEventData d;
        const BitSet w = core_->RequestedData(EV_NEW_METHOD);
        Put(d, w, DR_METHOD_ID, d.methodId, id);
        Put(d, w, DR_METHOD_NAME, d.szMethodName, m.name.c_str());
        if (!m.signature.empty()) Put(d, w, DR_METHOD_SIGNATURE, d.szMethodSig, m.signature.c_str());
        Put(d, w, DR_METHOD_ACCESS_TYPE, d.methodAccessType, AccessOf(m.flags));
        Put(d, w, DR_CLASS_ID, d.classId, m.classId);
        Put(d, w, DR_CLASS_NAME, d.szClassName, c.name.c_str());
        if (!m.sourceFile.empty()) Put(d, w, DR_SOURCE_FILE_NAME, d.szSourceFileName, m.sourceFile.c_str());
        if (w & DR_METHOD_LINE_NUMBERS) {
            d.lineNumbers.entries = m.lines.data();
            d.lineNumbers.uiSize = d.lineNumbers.uiActualSize = static_cast<unsigned>(m.lines.size());
            d.validData |= DR_METHOD_LINE_NUMBERS;
        }
        core_->Raise<INewMethodEventObserver>(d);
    }
    SCallGraphFilterData filter{c.name.c_str(), m.name.c_str(), m.signature.c_str(), AccessOf(m.flags)};
    m.interest = core_->CallGraphInterest(id, filter);
    StartCoverage(m, c);
    // Published last: martini_enter sees the method only with its interest settled.
    Publish(id, &m);
    return MARTINI_OK;
}

const MethodRecord *InterpProvider::FindMethod(martini_method_id id) const {
    if (id < kDenseIds) {
        const auto *chunk = dense_[id / kChunk].load(std::memory_order_acquire);
        return chunk == nullptr ? nullptr : chunk[id % kChunk].load(std::memory_order_acquire);
    }
    auto it = methods_.find(id);
    return it == methods_.end() ? nullptr : it->second;
}

void InterpProvider::Publish(martini_method_id id, const MethodRecord *m) {
    if (id >= kDenseIds) {
        methods_.emplace(id, m);
        return;
    }
    std::lock_guard lock(mutex_);
    auto *chunk = dense_[id / kChunk].load(std::memory_order_relaxed);
    if (chunk == nullptr) {
        denseStore_.push_back(std::make_unique<std::atomic<const MethodRecord *>[]>(kChunk));
        chunk = denseStore_.back().get();
        for (std::size_t i = 0; i < kChunk; ++i) chunk[i].store(nullptr, std::memory_order_relaxed);
        dense_[id / kChunk].store(chunk, std::memory_order_release);
    }
    chunk[id % kChunk].store(m, std::memory_order_release);
}

// ---- Calls ------------------------------------------------------------------------

template <class Observer>
void InterpProvider::RaiseCall(const ThreadRecord &t, const MethodRecord &m, BitSet wanted) {
    typename Observer::TEventData d;
    Put(d, wanted, DR_METHOD_ID, d.methodId, m.id);
    Put(d, wanted, DR_THREAD_ID, d.threadId, t.id);
    Put(d, wanted, DR_CPU_TIMESTAMP, d.uiCpuTimestamp, &core::Clock::NowNs);
    if (!t.Virtual()) Put(d, wanted, DR_THREAD_CPU_TIME, d.uiThreadCpuTime, &ThreadCpuNs);
    core_->Raise<Observer>(d, m.interest);
}

void InterpProvider::PopTo(ThreadRecord &t, std::size_t size) {
    if (t.timed.method != nullptr && t.timed.depth > size) CloseTimedBlock(t, core::Clock::NowNs());
    while (t.frames.size() > size) {
        const MethodRecord *m = t.frames.back().method;
        t.frames.pop_back();
        if (m->interest != 0) RaiseCall<IMethodLeaveEventObserver>(t, *m, leaveWanted_);
    }
}

martini_status InterpProvider::Enter(ThreadRecord &t, martini_method_id method, martini_stack_id stack,
                                     std::string &error) {
    if (stack == MARTINI_STACK_BASE) {
        error = "stack id 0 is MARTINI_STACK_BASE, not a frame";
        return MARTINI_E_ARGUMENT;
    }
    const MethodRecord *m = FindMethod(method);
    if (m == nullptr) {
        error = "method id " + std::to_string(method) + " was not registered (martini_method_register)";
        return MARTINI_E_UNKNOWN_ID;
    }
    SetCurrent(&t);
    // The innermost frame's own id again: that frame was replaced (a tail call).
    if (!t.frames.empty() && t.frames.back().stack == stack) PopTo(t, t.frames.size() - 1);
    t.frames.push_back({stack, m});
    if (m->interest != 0) RaiseCall<IMethodEnterEventObserver>(t, *m, enterWanted_);
    return MARTINI_OK;
}

martini_status InterpProvider::Exit(ThreadRecord &t, martini_stack_id returnedTo, std::string &error) {
    SetCurrent(&t);
    std::size_t keep = 0;
    if (returnedTo != MARTINI_STACK_BASE) {
        std::size_t i = t.frames.size();
        while (i > 0 && t.frames[i - 1].stack != returnedTo) --i;
        if (i == 0) {
            error = "stack id " + std::to_string(returnedTo) + " is not on thread " + std::to_string(t.id) +
                    "'s stack (" + std::to_string(t.frames.size()) + " frames); nothing was unwound";
            return MARTINI_E_STACK;
        }
        keep = i;
    }
    PopTo(t, keep);
    return MARTINI_OK;
}

// ---- Threads ----------------------------------------------------------------------


ThreadRecord *InterpProvider::NewThread(std::string name, TId parent, martini_vthread handle) {
    const auto lock = threads_.Locked();
    ThreadRecord &t = threads_.Add(lock);
    t.name = name.empty() ? (handle != 0 ? "vthread-" : "thread-") + std::to_string(t.id) : std::move(name);
    t.parent = parent;
    t.handle = handle;
    return &t;
}

void InterpProvider::AnnounceThread(const ThreadRecord &t) {
    if (!core_->IsEnabled(EV_THREAD_START)) return;
    SThreadStartEventData d;
    const BitSet w = core_->RequestedData(EV_THREAD_START);
    Put(d, w, DR_THREAD_ID, d.threadId, t.id);
    Put(d, w, DR_THREAD_NAME, d.szThreadName, t.name.c_str());
    if (t.parent != 0) Put(d, w, DR_THREAD_PARENT_ID, d.parentThreadId, t.parent);
    Put(d, w, DR_CPU_TIMESTAMP, d.uiCpuTimestamp, &core::Clock::NowNs);
    const ThreadRecord *saved = Current();
    SetCurrent(&t);
    core_->Raise<IThreadStartEventObserver>(d);
    SetCurrent(saved);
}

ThreadRecord *InterpProvider::OsThread(const char *name) {
    if (tOsThread.generation == generation_ && tOsThread.os != nullptr && !tOsThread.os->ended) {
        return tOsThread.os;
    }
    ThreadRecord *t;
    {
        std::lock_guard lock(mutex_);
        t = NewThread(name ? name : "", 0, 0);
    }
    if (tOsThread.generation != generation_) tOsThread = {generation_, nullptr, nullptr, 0, nullptr};
    tOsThread.os = t;
    AnnounceThread(*t);
    return t;
}

ThreadRecord *InterpProvider::FindVirtualThread(martini_vthread handle) {
    OsThreadSlot &slot = tOsThread;
    if (slot.generation == generation_ && slot.lastHandle == handle && slot.lastVirtual != nullptr &&
        !slot.lastVirtual->ended.load(std::memory_order_acquire)) {
        return slot.lastVirtual;
    }
    ThreadRecord *t;
    {
        std::lock_guard lock(mutex_);
        auto it = virtualThreads_.find(handle);
        t = it == virtualThreads_.end() ? nullptr : it->second;
    }
    if (slot.generation != generation_) slot = {generation_, nullptr, nullptr, 0, nullptr};
    slot.lastHandle = handle;
    slot.lastVirtual = t;
    return t;
}

martini_status InterpProvider::StartVirtualThread(martini_vthread handle, const char *name,
                                                  martini_vthread parent, std::string &error) {
    ThreadRecord *t;
    {
        std::lock_guard lock(mutex_);
        auto it = virtualThreads_.find(handle);
        if (it != virtualThreads_.end()) {
            error = "virtual thread " + std::to_string(handle) + " was already started (as thread " +
                    std::to_string(it->second->id) + ", '" + it->second->name + "')";
            return MARTINI_E_DUPLICATE_ID;
        }
        TId parentId = 0;
        if (parent != 0) {
            auto p = virtualThreads_.find(parent);
            if (p == virtualThreads_.end()) {
                error = "parent virtual thread " + std::to_string(parent) + " was not started";
                return MARTINI_E_UNKNOWN_ID;
            }
            parentId = p->second->id;
        } else if (tOsThread.generation == generation_ && tOsThread.os != nullptr) {
            parentId = tOsThread.os->id;
        }
        t = NewThread(name ? name : "", parentId, handle);
        virtualThreads_.emplace(handle, t);
    }
    AnnounceThread(*t);
    return MARTINI_OK;
}

martini_status InterpProvider::EndThread(ThreadRecord &t) {
    PopTo(t, 0);
    {
        std::lock_guard lock(mutex_);
        t.ended.store(true, std::memory_order_release);
        threads_.End(threads_.Locked(), t);
        if (t.Virtual()) virtualThreads_.erase(t.handle);  // the handle may be reused for a new thread
    }
    if (core_->IsEnabled(EV_THREAD_END)) {
        SThreadEndEventData d;
        const BitSet w = core_->RequestedData(EV_THREAD_END);
        Put(d, w, DR_THREAD_ID, d.threadId, t.id);
        Put(d, w, DR_CPU_TIMESTAMP, d.uiCpuTimestamp, &core::Clock::NowNs);
        core_->Raise<IThreadEndEventObserver>(d);
    }
    if (Current() == &t) SetCurrent(nullptr);
    return MARTINI_OK;
}

void InterpProvider::Rename(ThreadRecord &t, const char *name) {
    const auto lock = threads_.Locked();
    t.name = name;
}

// ---- Code -------------------------------------------------------------------------

martini_status InterpProvider::LoadCode(martini_method_id method, std::uint64_t address, std::uint64_t size,
                                        std::vector<SLineNumberTableEntry> lines, std::string &error) {
    const MethodRecord *m = FindMethod(method);
    if (m == nullptr) {
        error = "method id " + std::to_string(method) + " was not registered (martini_method_register)";
        return MARTINI_E_UNKNOWN_ID;
    }
    {
        std::lock_guard lock(mutex_);
        auto next = code_.lower_bound(address);
        const bool overlapsNext = next != code_.end() && next->first < address + size;
        const bool overlapsPrev =
            next != code_.begin() && std::prev(next)->first + std::prev(next)->second.size > address;
        if (overlapsNext || overlapsPrev) {
            const auto &other = overlapsNext ? *next : *std::prev(next);
            error = "code at " + std::to_string(address) + " (+" + std::to_string(size) +
                    ") overlaps the code of method " + std::to_string(other.second.method) + " at " +
                    std::to_string(other.first) + " (+" + std::to_string(other.second.size) +
                    "): unload that first";
            return MARTINI_E_ARGUMENT;
        }
        code_.emplace(address, CodeRecord{method, size, std::move(lines)});
    }
    if (core_->IsEnabled(EV_JITTED_METHOD_LOADED)) {
        SJittedMethodLoadedEventData d;
        const BitSet w = core_->RequestedData(EV_JITTED_METHOD_LOADED);
        Put(d, w, DR_METHOD_ID, d.methodId, method);
        if (w & DR_METHOD_CODE) {
            d.uiCodeAddress = address;
            d.uiCodeSize = static_cast<unsigned>(size);
            d.validData |= DR_METHOD_CODE;
        }
        core_->Raise<IJittedMethodLoadedEventObserver>(d);
    }
    return MARTINI_OK;
}

martini_status InterpProvider::UnloadCode(std::uint64_t address, std::string &error) {
    CodeRecord gone;
    {
        std::lock_guard lock(mutex_);
        auto it = code_.find(address);
        if (it == code_.end()) {
            error = "no code was loaded at " + std::to_string(address);
            return MARTINI_E_UNKNOWN_ID;
        }
        gone = std::move(it->second);
        code_.erase(it);
    }
    if (core_->IsEnabled(EV_JITTED_METHOD_UNLOADED)) {
        SJittedMethodUnloadedEventData d;
        const BitSet w = core_->RequestedData(EV_JITTED_METHOD_UNLOADED);
        Put(d, w, DR_METHOD_ID, d.methodId, gone.method);
        if (w & DR_METHOD_CODE) {
            d.uiCodeAddress = address;
            d.uiCodeSize = static_cast<unsigned>(gone.size);
            d.validData |= DR_METHOD_CODE;
        }
        core_->Raise<IJittedMethodUnloadedEventObserver>(d);
    }
    return MARTINI_OK;
}

// ---- Provider: data requests --------------------------------------------------------

core::RuntimeDescription InterpProvider::Describe() const {
    return {RT_INTERPRETER, runtimeName_, runtimeVersion_};
}

bool InterpProvider::CanRaise(TEventType event) const noexcept {
    switch (event) {
        case EV_VM_INIT: case EV_VM_SHUTDOWN: case EV_CLASS_LOAD: case EV_NEW_METHOD:
        case EV_METHOD_ENTER: case EV_METHOD_LEAVE: case EV_THREAD_START: case EV_THREAD_END:
        case EV_JITTED_METHOD_LOADED: case EV_JITTED_METHOD_UNLOADED: case EV_EC_SET_OUTPUT_DIRECTORY:
        case EV_EC_START: case EV_EC_STOP: case EV_EC_CUSTOM_COMMAND: case EV_EC_DETACH:
            return true;
        default:
            return false;
    }
}

TResult InterpProvider::DescribeClass(TId id, BitSet, core::ClassFacts &f) noexcept {
    std::lock_guard lock(mutex_);
    if (id == 0 || id > classes_.size()) return MRTE_ERROR_ILLEGAL_ID;
    const ClassRecord &c = classes_[id - 1];
    f.name = c.name;
    f.methods = c.methods;
    f.given = DR_CLASS_NAME | DR_CLASS_METHODS;
    if (!c.sourceFile.empty()) {
        f.sourceFile = c.sourceFile;
        f.given |= DR_SOURCE_FILE_NAME;
    }
    return MRTE_RESULT_OK;
}

TResult InterpProvider::DescribeMethod(TId id, BitSet, core::MethodFacts &f) noexcept {
    const MethodRecord *m = FindMethod(id);
    if (m == nullptr) return MRTE_ERROR_ILLEGAL_ID;
    std::lock_guard lock(mutex_);
    f.name = m->name;
    f.className = classes_[m->classId - 1].name;
    f.classId = m->classId;
    f.accessType = AccessOf(m->flags);
    f.lines = m->lines;
    f.given = DR_METHOD_NAME | DR_CLASS_NAME | DR_CLASS_ID | DR_METHOD_ACCESS_TYPE | DR_METHOD_LINE_NUMBERS;
    if (!m->signature.empty()) {
        f.signature = m->signature;
        f.given |= DR_METHOD_SIGNATURE;
    }
    if (!m->sourceFile.empty()) {
        f.sourceFile = m->sourceFile;
        f.given |= DR_SOURCE_FILE_NAME;
    }
    for (const auto &[address, code] : code_) {
        if (code.method == id) {
            f.codeAddress = address;
            f.codeSize = static_cast<unsigned>(code.size);
            f.given |= DR_METHOD_CODE;
            break;
        }
    }
    return MRTE_RESULT_OK;
}

TResult InterpProvider::DescribeThread(TId id, BitSet requested, unsigned maxFrames,
                                       core::ThreadFacts &f) noexcept {
    bool alive = false;
    const ThreadRecord *found = nullptr;
    if (const TResult r = threads_.DescribeRecorded(id, f, alive, &found); r != MRTE_RESULT_OK) return r;
    if (alive) {
        f.state = TS_RUNNING;
        f.given |= DR_THREAD_STATE;
    }
    const ThreadRecord &t = *found;
    // A thread's stack changes without the lock, on its own OS thread, so only that
    // thread can read it: from a handler of its own event.
    if ((requested & DR_VM_CALL_STACK) && Current() == &t) {
        const std::size_t n = t.frames.size();
        const std::size_t take = maxFrames == 0 ? n : std::min<std::size_t>(n, maxFrames);
        f.stackDepth = n;
        f.stack.reserve(take);
        for (std::size_t i = 0; i < take; ++i) {
            const MethodRecord *m = t.frames[n - 1 - i].method;
            f.stack.push_back({m->id, ~0u, m->lines.empty() ? 0u : m->lines.front().uiLineNumber});
        }
        f.given |= DR_VM_CALL_STACK;
    }
    return MRTE_RESULT_OK;
}

TResult InterpProvider::ListThreads(std::vector<TId> &out) noexcept { return threads_.List(out); }

TResult InterpProvider::DescribeCompiledCode(UIOP address, BitSet, core::CompiledMethodFacts &f) noexcept {
    std::lock_guard lock(mutex_);
    auto it = code_.upper_bound(address);
    if (it == code_.begin()) return MRTE_ERROR_ILLEGAL_ID;
    --it;
    if (address >= it->first + it->second.size) return MRTE_ERROR_ILLEGAL_ID;
    f.methodId = it->second.method;
    f.codeAddress = it->first;
    f.codeSize = static_cast<unsigned>(it->second.size);
    f.location = static_cast<unsigned>(address - it->first);
    f.given = DR_METHOD_ID | DR_METHOD_CODE;
    const auto &lines = it->second.lines;
    auto row = std::upper_bound(lines.begin(), lines.end(), f.location,
                                [](unsigned off, const SLineNumberTableEntry &e) { return off < e.uiOffset; });
    if (row != lines.begin()) {
        f.lineNumber = std::prev(row)->uiLineNumber;
        f.given |= DR_LINE_NUMBER;
    }
    return MRTE_RESULT_OK;
}

TResult InterpProvider::CurrentThread(TId &id) noexcept {
    if (const ThreadRecord *t = Current(); t != nullptr) {
        id = t->id;
        return MRTE_RESULT_OK;
    }
    if (tOsThread.generation == generation_ && tOsThread.os != nullptr && !tOsThread.os->ended) {
        id = tOsThread.os->id;
        return MRTE_RESULT_OK;
    }
    return MRTE_ERROR_FAIL;
}

}  // namespace martini::interp
