// Data requests: validate the request, ask the provider for facts, copy them into the
// client's buffers and work out the MPI result code. Every provider goes through
// here, so the result codes are the same on every runtime.
#include "registry.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

namespace martini::core {

namespace {

constexpr BitSet kModuleItems = DR_MODULE_NAME;
constexpr BitSet kClassItems = DR_CLASS_NAME | DR_SOURCE_FILE_NAME | DR_MODULE_ID | DR_CLASS_METHODS;
constexpr BitSet kMethodItems = DR_METHOD_NAME | DR_METHOD_SIGNATURE | DR_CLASS_NAME |
                                DR_SOURCE_FILE_NAME | DR_CLASS_ID | DR_MODULE_ID |
                                DR_METHOD_ACCESS_TYPE | DR_METHOD_LINE_NUMBERS | DR_METHOD_CODE;
constexpr BitSet kObjectItems = DR_CLASS_ID | DR_OBJECT_SIZE | DR_ARRAY_INFO;
constexpr BitSet kThreadItems = DR_THREAD_NAME | DR_THREAD_GROUP | DR_THREAD_PARENT_ID |
                                DR_THREAD_STATE | DR_VM_CALL_STACK | DR_THREAD_CPU_TIME |
                                DR_OBJECT_ID;
constexpr BitSet kReferenceItems = DR_OBJECT_REFERENCES;
constexpr BitSet kCompiledItems = DR_METHOD_ID | DR_METHOD_CODE | DR_LINE_NUMBER;

// Copies facts into one client structure and keeps the outcome.
class Writer {
public:
    Writer(BitSet requested, BitSet given, BitSet &validData)
        : requested_(requested), given_(given), valid_(validData) {
        valid_ = DR_NONE;
    }

    bool Wants(BitSet item) const { return (requested_ & item) != 0; }
    bool Has(BitSet item) const { return Wants(item) && (given_ & item) != 0; }

    template <class T>
    void Value(BitSet item, const T &from, T &to) {
        if (!Has(item)) return;
        to = from;
        valid_ |= item;
    }

    // size: in = buffer size (0: legacy size), out = size needed when it does not fit.
    void String(BitSet item, const std::string &from, char *to, unsigned int &size) {
        if (!Has(item)) return;
        const std::size_t capacity = size == 0 ? MPI_LEGACY_STRING_BUFFER_SIZE : size;
        const std::size_t needed = from.size() + 1;
        if (needed > capacity) {
            std::memcpy(to, from.data(), capacity - 1);
            to[capacity - 1] = '\0';
            size = static_cast<unsigned int>(needed);
            short_ = true;
            return;
        }
        std::memcpy(to, from.data(), needed);
        valid_ |= item;
    }

    template <class T>
    // `total`: how many elements there are when `from` holds only the first ones.
    void Array(BitSet item, const std::vector<T> &from, SArray<T> &to, std::size_t limit = 0, std::size_t total = 0) {
        if (!Has(item)) return;
        const std::size_t all = std::max(total, from.size());
        const std::size_t n = limit == 0 ? all : std::min(limit, all);
        const std::size_t written = std::min({n, from.size(), std::size_t{to.uiSize}});
        if (written > 0) std::copy_n(from.begin(), written, to.entries);
        to.uiActualSize = static_cast<unsigned int>(n);
        if (n > to.uiSize) {
            short_ = true;
            return;
        }
        valid_ |= item;
    }

    TResult Result() const {
        if (short_) return MRTE_ERROR_BUFFER_TOO_SHORT;
        return valid_ == requested_ ? MRTE_RESULT_OK : MRTE_ERROR_PARTIAL_INFO;
    }

private:
    BitSet requested_, given_;
    BitSet &valid_;
    bool short_ = false;
};

// A requested string needs a buffer; a requested array needs entries unless it has
// no room at all (uiSize 0 is the way to ask "how many?").
bool MissingString(BitSet requested, BitSet item, const char *buffer) {
    return (requested & item) != 0 && buffer == nullptr;
}
template <class T>
bool MissingArray(BitSet requested, BitSet item, const SArray<T> &array) {
    return (requested & item) != 0 && array.entries == nullptr && array.uiSize != 0;
}

// The worse of two data-request results (for requests over several elements).
TResult Worse(TResult a, TResult b) {
    auto rank = [](TResult r) {
        switch (r) {
            case MRTE_RESULT_OK: return 0;
            case MRTE_ERROR_PARTIAL_INFO: return 1;
            case MRTE_ERROR_BUFFER_TOO_SHORT: return 2;
            default: return 3;
        }
    };
    return rank(b) > rank(a) ? b : a;
}

bool ThreadBuffersMissing(BitSet requested, const SThreadInfo &info) {
    return MissingString(requested, DR_THREAD_NAME, info.szName) ||
           MissingString(requested, DR_THREAD_GROUP, info.szGroupName) ||
           MissingArray(requested, DR_VM_CALL_STACK, info.stackTrace);
}

TResult WriteThread(BitSet requested, unsigned maxDepth, const ThreadFacts &f, SThreadInfo &to) {
    Writer w(requested, f.given, to.validData);
    w.String(DR_THREAD_NAME, f.name, to.szName, to.uiNameSize);
    w.String(DR_THREAD_GROUP, f.group, to.szGroupName, to.uiGroupNameSize);
    w.Value(DR_THREAD_PARENT_ID, f.parentThreadId, to.parentThreadId);
    w.Value(DR_THREAD_STATE, f.state, to.state);
    w.Array(DR_VM_CALL_STACK, f.stack, to.stackTrace, maxDepth, f.stackDepth);
    w.Value(DR_THREAD_CPU_TIME, f.cpuTimeNs, to.uiCpuTime);
    w.Value(DR_OBJECT_ID, f.threadObjectId, to.threadObjectId);
    return w.Result();
}

}  // namespace

// Order of checks, the same for every request: the client id, pData, items the
// request does not answer, the phase, then the buffers of the requested items.
TResult Registry::CheckRequest(TId clientId, const void *pData, BitSet requested,
                               BitSet answerable) const noexcept {
    if (Find(clientId) == nullptr) return MRTE_ERROR_ILLEGAL_ID;
    if (pData == nullptr) return MRTE_ERROR_NULL_PTR;
    if ((requested & ~answerable) != 0) return MRTE_ERROR_NOT_SUPPORTED;
    if (!live()) return MRTE_ERROR_PHASE_FAILURE;
    return MRTE_RESULT_OK;
}

TResult Registry::GetModuleInfo(TId clientId, TId moduleId, BitSet requested, SModuleInfo *p) noexcept {
    return Guarded([&]() -> TResult {
        if (TResult r = CheckRequest(clientId, p, requested, kModuleItems); r != MRTE_RESULT_OK) return r;
        if (MissingString(requested, DR_MODULE_NAME, p->szModuleName)) return MRTE_ERROR_NULL_PTR;
        ModuleFacts f;
        if (TResult r = provider_.DescribeModule(moduleId, requested, f); r != MRTE_RESULT_OK) return r;
        Writer w(requested, f.given, p->validData);
        w.String(DR_MODULE_NAME, f.name, p->szModuleName, p->uiModuleNameSize);
        return w.Result();
    });
}

TResult Registry::GetClassInfo(TId clientId, TId classId, BitSet requested, SClassInfo *p) noexcept {
    return Guarded([&]() -> TResult {
        if (TResult r = CheckRequest(clientId, p, requested, kClassItems); r != MRTE_RESULT_OK) return r;
        if (MissingString(requested, DR_CLASS_NAME, p->szClassName) ||
            MissingString(requested, DR_SOURCE_FILE_NAME, p->szSourceFileName) ||
            MissingArray(requested, DR_CLASS_METHODS, p->methods)) {
            return MRTE_ERROR_NULL_PTR;
        }
        ClassFacts f;
        if (TResult r = provider_.DescribeClass(classId, requested, f); r != MRTE_RESULT_OK) return r;
        Writer w(requested, f.given, p->validData);
        w.String(DR_CLASS_NAME, f.name, p->szClassName, p->uiClassNameSize);
        w.String(DR_SOURCE_FILE_NAME, f.sourceFile, p->szSourceFileName, p->uiSourceFileNameSize);
        w.Value(DR_MODULE_ID, f.moduleId, p->moduleId);
        w.Array(DR_CLASS_METHODS, f.methods, p->methods);
        return w.Result();
    });
}

TResult Registry::GetMethodInfo(TId clientId, TId methodId, BitSet requested, SMethodInfo *p) noexcept {
    return Guarded([&]() -> TResult {
        if (TResult r = CheckRequest(clientId, p, requested, kMethodItems); r != MRTE_RESULT_OK) return r;
        if (MissingString(requested, DR_METHOD_NAME, p->szMethodName) ||
            MissingString(requested, DR_METHOD_SIGNATURE, p->szMethodSig) ||
            MissingString(requested, DR_CLASS_NAME, p->szClassName) ||
            MissingString(requested, DR_SOURCE_FILE_NAME, p->szSourceFileName) ||
            MissingArray(requested, DR_METHOD_LINE_NUMBERS, p->lineNumbers)) {
            return MRTE_ERROR_NULL_PTR;
        }
        MethodFacts f;
        if (TResult r = provider_.DescribeMethod(methodId, requested, f); r != MRTE_RESULT_OK) return r;
        Writer w(requested, f.given, p->validData);
        w.String(DR_METHOD_NAME, f.name, p->szMethodName, p->uiMethodNameSize);
        w.String(DR_METHOD_SIGNATURE, f.signature, p->szMethodSig, p->uiMethodSigSize);
        w.String(DR_CLASS_NAME, f.className, p->szClassName, p->uiClassNameSize);
        w.String(DR_SOURCE_FILE_NAME, f.sourceFile, p->szSourceFileName, p->uiSourceFileNameSize);
        w.Value(DR_CLASS_ID, f.classId, p->classId);
        w.Value(DR_MODULE_ID, f.moduleId, p->moduleId);
        w.Value(DR_METHOD_ACCESS_TYPE, f.accessType, p->methodAccessType);
        w.Array(DR_METHOD_LINE_NUMBERS, f.lines, p->lineNumbers);
        if (w.Has(DR_METHOD_CODE)) {
            p->uiCodeAddress = f.codeAddress;
            w.Value(DR_METHOD_CODE, f.codeSize, p->uiCodeSize);
        }
        return w.Result();
    });
}

TResult Registry::GetObjectInfo(TId clientId, TId objectId, BitSet requested, SObjectInfo *p) noexcept {
    return Guarded([&]() -> TResult {
        if (TResult r = CheckRequest(clientId, p, requested, kObjectItems); r != MRTE_RESULT_OK) return r;
        ObjectFacts f;
        if (TResult r = provider_.DescribeObject(objectId, requested, f); r != MRTE_RESULT_OK) return r;
        Writer w(requested, f.given, p->validData);
        w.Value(DR_CLASS_ID, f.classId, p->classId);
        w.Value(DR_OBJECT_SIZE, f.size, p->uiObjectSize);
        w.Value(DR_ARRAY_INFO, f.arrayInfo, p->arrayInfo);
        return w.Result();
    });
}

TResult Registry::GetThreadInfo(TId clientId, TId threadId, BitSet requested, SThreadInfo *p) noexcept {
    return Guarded([&]() -> TResult {
        if (TResult r = CheckRequest(clientId, p, requested, kThreadItems); r != MRTE_RESULT_OK) return r;
        if (ThreadBuffersMissing(requested, *p)) return MRTE_ERROR_NULL_PTR;
        ThreadFacts f;
        // The provider need not collect more frames than the buffer holds (a deep stack
        // walked for a few frames costs its whole depth otherwise).
        const unsigned frames = (requested & DR_VM_CALL_STACK) != 0 ? p->stackTrace.uiSize : 0;
        if (TResult r = provider_.DescribeThread(threadId, requested, frames, f); r != MRTE_RESULT_OK) return r;
        return WriteThread(requested, 0, f, *p);
    });
}

TResult Registry::GetAllThreadsInfo(TId clientId, unsigned int maxDepth, BitSet requested,
                                    SThreadInfoArray *p) noexcept {
    return Guarded([&]() -> TResult {
        if (TResult r = CheckRequest(clientId, p, requested, kThreadItems); r != MRTE_RESULT_OK) return r;
        if (p->entries == nullptr && p->uiSize != 0) return MRTE_ERROR_NULL_PTR;
        for (unsigned i = 0; i < p->uiSize; ++i) {
            if (ThreadBuffersMissing(requested, p->entries[i].threadInfo)) return MRTE_ERROR_NULL_PTR;
        }
        std::vector<TId> threads;
        if (TResult r = provider_.ListThreads(threads); r != MRTE_RESULT_OK) return r;
        p->uiActualSize = static_cast<unsigned int>(threads.size());
        TResult result = threads.size() > p->uiSize ? MRTE_ERROR_BUFFER_TOO_SHORT : MRTE_RESULT_OK;
        const std::size_t n = std::min<std::size_t>(threads.size(), p->uiSize);
        for (std::size_t i = 0; i < n; ++i) {
            SThreadInfoArrayEntry &entry = p->entries[i];
            entry.threadId = threads[i];
            ThreadFacts f;
            TResult r = provider_.DescribeThread(threads[i], requested, maxDepth, f);
            if (r == MRTE_ERROR_ILLEGAL_ID) {  // ended since the listing: report it empty
                entry.threadInfo.validData = DR_NONE;
                result = Worse(result, MRTE_ERROR_PARTIAL_INFO);
                continue;
            }
            if (r != MRTE_RESULT_OK) return r;
            // Depth 0: as many frames as this entry's buffer holds (no room: all, so that
            // BUFFER_TOO_SHORT says how many there are).
            const unsigned depth = maxDepth != 0 ? maxDepth : entry.threadInfo.stackTrace.uiSize;
            result = Worse(result, WriteThread(requested, depth, f, entry.threadInfo));
        }
        return result;
    });
}

TResult Registry::GetObjectReferences(TId clientId, TId objectId, BitSet requested,
                                      SObjectReferenceInfo *p) noexcept {
    return Guarded([&]() -> TResult {
        if (TResult r = CheckRequest(clientId, p, requested, kReferenceItems); r != MRTE_RESULT_OK) return r;
        if (MissingArray(requested, DR_OBJECT_REFERENCES, p->references)) return MRTE_ERROR_NULL_PTR;
        ObjectReferenceFacts f;
        if (TResult r = provider_.DescribeObjectReferences(objectId, requested, f); r != MRTE_RESULT_OK) {
            return r;
        }
        Writer w(requested, f.given, p->validData);
        w.Array(DR_OBJECT_REFERENCES, f.references, p->references);
        return w.Result();
    });
}

TResult Registry::GetCompiledMethodInfo(TId clientId, UIOP codeAddress, BitSet requested,
                                        SCompiledMethodInfo *p) noexcept {
    return Guarded([&]() -> TResult {
        if (TResult r = CheckRequest(clientId, p, requested, kCompiledItems); r != MRTE_RESULT_OK) return r;
        CompiledMethodFacts f;
        if (TResult r = provider_.DescribeCompiledCode(codeAddress, requested, f); r != MRTE_RESULT_OK) {
            return r;
        }
        Writer w(requested, f.given, p->validData);
        w.Value(DR_METHOD_ID, f.methodId, p->methodId);
        if (w.Has(DR_METHOD_CODE)) {
            p->uiCodeAddress = f.codeAddress;
            p->uiLocation = f.location;
            w.Value(DR_METHOD_CODE, f.codeSize, p->uiCodeSize);
        }
        w.Value(DR_LINE_NUMBER, f.lineNumber, p->uiLineNumber);
        return w.Result();
    });
}

// ---- Miscellaneous -----------------------------------------------------------------

TResult Registry::GetCurrentThreadId(TId clientId, TId *pThreadId) noexcept {
    return Guarded([&]() -> TResult {
        if (Find(clientId) == nullptr) return MRTE_ERROR_ILLEGAL_ID;
        if (pThreadId == nullptr) return MRTE_ERROR_NULL_PTR;
        return provider_.CurrentThread(*pThreadId);
    });
}

TResult Registry::GetRuntimeInfo(TId clientId, SRuntimeInfo *pInfo) noexcept {
    return Guarded([&]() -> TResult {
        if (Find(clientId) == nullptr) return MRTE_ERROR_ILLEGAL_ID;
        if (pInfo == nullptr) return MRTE_ERROR_NULL_PTR;
        const RuntimeDescription d = provider_.Describe();
        pInfo->runtimeType = d.type;
        auto copy = [](const std::string &from, char *to, std::size_t capacity) {
            const std::size_t n = std::min(from.size(), capacity - 1);
            std::memcpy(to, from.data(), n);
            to[n] = '\0';
        };
        copy(d.name, pInfo->szRuntimeName, sizeof pInfo->szRuntimeName);
        copy(d.version, pInfo->szRuntimeVersion, sizeof pInfo->szRuntimeVersion);
        pInfo->uiMpiVersion = MARTINI_MPI_VERSION;
        return MRTE_RESULT_OK;
    });
}

TResult Registry::SuspendVM(TId clientId) noexcept {
    return Guarded([&]() -> TResult {
        if (Find(clientId) == nullptr) return MRTE_ERROR_ILLEGAL_ID;
        if (!live()) return MRTE_ERROR_PHASE_FAILURE;
        return provider_.SuspendAll();
    });
}

TResult Registry::ResumeVM(TId clientId) noexcept {
    return Guarded([&]() -> TResult {
        if (Find(clientId) == nullptr) return MRTE_ERROR_ILLEGAL_ID;
        if (!live()) return MRTE_ERROR_PHASE_FAILURE;
        return provider_.ResumeAll();
    });
}

TResult Registry::RunGC(TId clientId) noexcept {
    return Guarded([&]() -> TResult {
        if (Find(clientId) == nullptr) return MRTE_ERROR_ILLEGAL_ID;
        if (!live()) return MRTE_ERROR_PHASE_FAILURE;
        return provider_.RunGc();
    });
}

TResult Registry::SetAllocationSamplingInterval(TId clientId, unsigned int bytes) noexcept {
    return Guarded([&]() -> TResult {
        if (Find(clientId) == nullptr) return MRTE_ERROR_ILLEGAL_ID;
        std::lock_guard lock(samplingMutex_);
        if (samplingSet_ && bytes >= samplingInterval_) return MRTE_RESULT_OK;  // a smaller one holds
        const TResult r = provider_.SetAllocationSampling(bytes);
        if (r == MRTE_RESULT_OK) {
            samplingSet_ = true;
            samplingInterval_ = bytes;
        }
        return r;
    });
}

TResult Registry::SetSamplingRate(TId clientId, unsigned int hz, ESamplingClock givenClock) noexcept {
    // A client may pass any bits as the clock: read them as an integer (a value outside
    // the enumeration is no value of its type, and loading it as one is undefined).
    std::underlying_type_t<ESamplingClock> raw;
    std::memcpy(&raw, &givenClock, sizeof raw);
    return Guarded([&]() -> TResult {
        if (Find(clientId) == nullptr) return MRTE_ERROR_ILLEGAL_ID;
        if (hz == 0 || hz > kMaxSamplingHz || (raw != SC_CPU && raw != SC_WALL)) return MRTE_ERROR_ILLEGAL_ARGUMENT;
        const ESamplingClock clock = raw == SC_WALL ? SC_WALL : SC_CPU;
        std::lock_guard lock(samplingMutex_);
        if (samplingHz_ != 0 && clock != samplingClock_) return MRTE_ERROR_NOT_SUPPORTED;  // the first clock holds
        if (samplingHz_ >= hz) return MRTE_RESULT_OK;  // a higher rate holds
        const TResult r = provider_.SetSamplingRate(hz, clock == SC_WALL);
        if (r == MRTE_RESULT_OK) {
            samplingHz_ = hz;
            samplingClock_ = clock;
        }
        return r;
    });
}

}  // namespace martini::core
