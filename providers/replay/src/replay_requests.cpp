// The replay provider's answers to data requests: what the trace declared (modules,
// classes, methods, objects, threads, compiled code), as the core routes them.
#include "martini/replay/replay_provider.h"

#include <algorithm>

namespace martini::replay {

using namespace Martini::MPI;

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
