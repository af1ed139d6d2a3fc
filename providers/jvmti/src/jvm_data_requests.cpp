// The JVM provider: answers to data requests, and suspend/resume/GC.
#include "jvm_provider.h"
#include "jvm_support.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>

namespace martini::jvm {

// ---- Data requests ----------------------------------------------------------------------

namespace {

// What a class's methods share with it: its module and source file, when known
// (ClassFacts and MethodFacts alike).
template <class Facts>
void GiveClassOrigin(const ClassRecord &c, Facts &f) {
    if (c.moduleId != 0) {
        f.moduleId = c.moduleId;
        f.given |= DR_MODULE_ID;
    }
    if (!c.sourceFile.empty()) {
        f.sourceFile = c.sourceFile;
        f.given |= DR_SOURCE_FILE_NAME;
    }
}

}  // namespace

TResult JvmProvider::DescribeModule(TId id, BitSet, core::ModuleFacts &f) noexcept {
    std::lock_guard lock(mutex_);
    if (id == 0 || id > modules_.size()) return MRTE_ERROR_ILLEGAL_ID;
    f.name = modules_[id - 1];
    f.given = DR_MODULE_NAME;
    return MRTE_RESULT_OK;
}

TResult JvmProvider::DescribeClass(TId id, BitSet, core::ClassFacts &f) noexcept {
    std::lock_guard lock(mutex_);
    if (id == 0 || id > classes_.size()) return MRTE_ERROR_ILLEGAL_ID;
    const ClassRecord &c = *classes_[id - 1];
    f.name = c.name;
    f.methods = c.methods;
    f.given = DR_CLASS_NAME | DR_CLASS_METHODS;
    GiveClassOrigin(c, f);
    return MRTE_RESULT_OK;
}

TResult JvmProvider::DescribeMethod(TId id, BitSet, core::MethodFacts &f) noexcept {
    const MethodRecord *m = methods_.Get(id);
    if (m == nullptr || id > methods_.size()) return MRTE_ERROR_ILLEGAL_ID;
    std::lock_guard lock(mutex_);
    const ClassRecord &c = *classes_[m->classId - 1];
    f.name = m->name;
    f.signature = m->descriptor;
    f.className = c.name;
    f.classId = m->classId;
    f.accessType = AccessType(c.access, m->access);
    f.given = DR_METHOD_NAME | DR_METHOD_SIGNATURE | DR_CLASS_NAME | DR_CLASS_ID | DR_METHOD_ACCESS_TYPE;
    GiveClassOrigin(c, f);
    if (m->hasCode) {
        for (const auto &l : m->lines) f.lines.push_back({l.offset, l.line});
        f.given |= DR_METHOD_LINE_NUMBERS;
    }
    if (const auto address = m->codeAddress.load(std::memory_order_acquire); address != 0) {
        f.codeAddress = address;
        f.codeSize = m->codeSize.load(std::memory_order_relaxed);
        f.given |= DR_METHOD_CODE;
    }
    return MRTE_RESULT_OK;
}

TResult JvmProvider::DescribeObject(TId id, BitSet, core::ObjectFacts &f) noexcept {
    std::lock_guard lock(mutex_);
    auto it = objects_.find(id);
    if (it == objects_.end()) return MRTE_ERROR_ILLEGAL_ID;
    f.classId = it->second.classId;
    f.size = it->second.size;
    f.arrayInfo = it->second.arrayInfo;
    f.given = DR_CLASS_ID | DR_OBJECT_SIZE | DR_ARRAY_INFO;
    return MRTE_RESULT_OK;
}

TResult JvmProvider::DescribeThread(TId id, BitSet requested, unsigned maxFrames, core::ThreadFacts &f) noexcept {
    JNIEnv *jni = nullptr;
    if (vm_->GetEnv(reinterpret_cast<void **>(&jni), JNI_VERSION_1_8) != JNI_OK) return MRTE_ERROR_FAIL;
    jthread thread = nullptr;
    {
        std::lock_guard lock(mutex_);
        auto it = threads_.find(id);
        if (it == threads_.end()) return MRTE_ERROR_ILLEGAL_ID;
        f.name = it->second.name;
        f.group = it->second.group;
        f.given = DR_THREAD_NAME | DR_THREAD_GROUP;
        if (it->second.parent != 0) {
            f.parentThreadId = it->second.parent;
            f.given |= DR_THREAD_PARENT_ID;
        }
        if (!it->second.alive) {
            f.state = TS_TERMINATED;
            f.given |= DR_THREAD_STATE;
            return MRTE_RESULT_OK;
        }
        if (it->second.thread) thread = jni->NewLocalRef(it->second.thread);
    }
    if (thread == nullptr) return MRTE_RESULT_OK;
    jint state = 0;
    if (jvmti_->GetThreadState(thread, &state) == JVMTI_ERROR_NONE) {
        f.state = StateFromJvmti(state);
        f.given |= DR_THREAD_STATE;
    }
    if (requested & DR_VM_CALL_STACK) {
        const jint depth = maxFrames == 0 ? 4096 : static_cast<jint>(maxFrames);
        std::vector<jvmtiFrameInfo> frames(static_cast<std::size_t>(depth));
        jint count = 0;
        if (jvmti_->GetStackTrace(thread, 0, depth, frames.data(), &count) == JVMTI_ERROR_NONE) {
            AppendFrames(frames.data(), count, f.stack);
            f.given |= DR_VM_CALL_STACK;
        }
    }
    if (requested & DR_THREAD_CPU_TIME) {
        jlong cpu = 0;
        if (jvmti_->GetThreadCpuTime(thread, &cpu) == JVMTI_ERROR_NONE) {
            f.cpuTimeNs = static_cast<std::uint64_t>(cpu);
            f.given |= DR_THREAD_CPU_TIME;
        }
    }
    jni->DeleteLocalRef(thread);
    return MRTE_RESULT_OK;
}

TResult JvmProvider::ListThreads(std::vector<TId> &out) noexcept {
    std::lock_guard lock(mutex_);
    out.clear();
    for (const auto &[id, r] : threads_) {
        if (r.alive) out.push_back(id);
    }
    std::sort(out.begin(), out.end());
    return MRTE_RESULT_OK;
}

TResult JvmProvider::DescribeCompiledCode(UIOP address, BitSet, core::CompiledMethodFacts &f) noexcept {
    const TId n = methods_.size();
    for (TId id = 1; id <= n; ++id) {
        const MethodRecord *m = methods_.Get(id);
        const auto start = m ? m->codeAddress.load(std::memory_order_acquire) : 0;
        if (start != 0 && address >= start && address < start + m->codeSize.load(std::memory_order_relaxed)) {
            f.methodId = id;
            f.codeAddress = start;
            f.codeSize = m->codeSize.load(std::memory_order_relaxed);
            f.given = DR_METHOD_ID | DR_METHOD_CODE;
            return MRTE_RESULT_OK;
        }
    }
    return MRTE_ERROR_ILLEGAL_ID;
}

TResult JvmProvider::CurrentThread(TId &id) noexcept {
    if (tContext != nullptr) {
        id = tContext->id;
        return MRTE_RESULT_OK;
    }
    JNIEnv *jni = nullptr;
    if (vm_->GetEnv(reinterpret_cast<void **>(&jni), JNI_VERSION_1_8) != JNI_OK) return MRTE_ERROR_FAIL;
    id = ContextOf(jni).id;
    return MRTE_RESULT_OK;
}

TResult JvmProvider::SuspendAll() noexcept {
    jvmtiCapabilities caps{};
    caps.can_suspend = 1;
    if (jvmti_->AddCapabilities(&caps) != JVMTI_ERROR_NONE) return MRTE_ERROR_NOT_SUPPORTED;
    jint count = 0;
    jthread *threads = nullptr;
    if (jvmti_->GetAllThreads(&count, &threads) != JVMTI_ERROR_NONE) return MRTE_ERROR_FAIL;
    JNIEnv *jni = nullptr;
    vm_->GetEnv(reinterpret_cast<void **>(&jni), JNI_VERSION_1_8);
    jthread self = nullptr;
    jvmti_->GetCurrentThread(&self);
    std::vector<jthread> others;
    for (jint i = 0; i < count; ++i) {
        if (self == nullptr || jni == nullptr || !jni->IsSameObject(threads[i], self)) others.push_back(threads[i]);
    }
    std::vector<jvmtiError> results(others.size());
    const jvmtiError e = jvmti_->SuspendThreadList(static_cast<jint>(others.size()), others.data(), results.data());
    jvmti_->Deallocate(reinterpret_cast<unsigned char *>(threads));
    return e == JVMTI_ERROR_NONE ? MRTE_RESULT_OK : MRTE_ERROR_FAIL;
}

TResult JvmProvider::ResumeAll() noexcept {
    jint count = 0;
    jthread *threads = nullptr;
    if (jvmti_->GetAllThreads(&count, &threads) != JVMTI_ERROR_NONE) return MRTE_ERROR_FAIL;
    std::vector<jvmtiError> results(static_cast<std::size_t>(count));
    const jvmtiError e = jvmti_->ResumeThreadList(count, threads, results.data());
    jvmti_->Deallocate(reinterpret_cast<unsigned char *>(threads));
    return e == JVMTI_ERROR_NONE || e == JVMTI_ERROR_MUST_POSSESS_CAPABILITY ? MRTE_RESULT_OK : MRTE_ERROR_FAIL;
}

TResult JvmProvider::RunGc() noexcept {
    return jvmti_->ForceGarbageCollection() == JVMTI_ERROR_NONE ? MRTE_RESULT_OK : MRTE_ERROR_FAIL;
}

}  // namespace martini::jvm
