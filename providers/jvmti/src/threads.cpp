#include "threads.h"

#include "calls.h"
#include "classes.h"
#include "interactions.h"
#include "jvm_support.h"
#include "sampling.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>

#include <algorithm>

namespace martini::jvm {

constinit thread_local ThreadContext *tContext __attribute__((tls_model("initial-exec"))) = nullptr;

void Threads::SetCallbacks(jvmtiEventCallbacks &callbacks) {
    callbacks.ThreadStart = OnThreadStart;
    callbacks.ThreadEnd = OnThreadEnd;
}

void Threads::EnableEvents() {
    // Always: thread ids and contexts are the agent's own need.
    Vm::Jvmti()->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_THREAD_START, nullptr);
    Vm::Jvmti()->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_THREAD_END, nullptr);
}

void Threads::NameOf(JNIEnv *jni, jthread thread, std::string &name, std::string &group) {
    jvmtiEnv *jvmti = Vm::Jvmti();
    jvmtiThreadInfo info{};
    if (thread == nullptr || jvmti->GetThreadInfo(thread, &info) != JVMTI_ERROR_NONE) return;
    name = info.name ? info.name : "";
    if (info.name) jvmti->Deallocate(reinterpret_cast<unsigned char *>(info.name));
    if (info.thread_group) {
        jvmtiThreadGroupInfo g{};
        if (jvmti->GetThreadGroupInfo(info.thread_group, &g) == JVMTI_ERROR_NONE && g.name) {
            group = g.name;
            jvmti->Deallocate(reinterpret_cast<unsigned char *>(g.name));
        }
        jni->DeleteLocalRef(info.thread_group);
    }
    if (info.context_class_loader) jni->DeleteLocalRef(info.context_class_loader);
}

ThreadContext &Threads::ContextOf(JNIEnv *jni) {
    if (tContext != nullptr) return *tContext;
    jthread thread = nullptr;
    Vm::Jvmti()->GetCurrentThread(&thread);
    std::string name, group;
    NameOf(jni, thread, name, group);
    const TId tag = trackObjects_ ? Vm::TagOf(thread, true) : 0;
    const auto osTid = static_cast<std::uint64_t>(syscall(SYS_gettid));
    const auto lock = threads_.Locked();
    // A record made for this OS thread from a sample (IdOfOsThread) is adopted.
    Record *adopted = threads_.Live(lock, osTid);
    Record &r = adopted != nullptr && !adopted->context ? *adopted : threads_.Add(lock, osTid);
    const TId id = r.id;
    r.thread = thread ? jni->NewWeakGlobalRef(thread) : nullptr;
    r.tag = tag;
    r.name = name;
    r.group = group;
    r.context = std::make_unique<ThreadContext>();
    r.context->id = id;
    r.context->stack.reserve(256);
    if (tag != 0) idByTag_[tag] = id;
    tContext = r.context.get();
    if (thread) jni->DeleteLocalRef(thread);
    return *tContext;
}

TId Threads::IdOfOsThread(pid_t tid) {
    const auto lock = threads_.Locked();
    if (const Record *r = threads_.Live(lock, static_cast<std::uint64_t>(tid))) return r->id;
    std::string name;
    if (std::FILE *f = std::fopen(("/proc/self/task/" + std::to_string(tid) + "/comm").c_str(), "r")) {
        char buf[64] = {};
        if (std::fgets(buf, sizeof buf, f) != nullptr) name = buf;
        std::fclose(f);
        if (!name.empty() && name.back() == '\n') name.pop_back();
    }
    Record &r = threads_.Add(lock, static_cast<std::uint64_t>(tid));
    r.name = name;
    return r.id;
}

void Threads::ForgetStacks() {
    const auto lock = threads_.Locked();
    threads_.ForEach(lock, [](Record &r) {
        if (!r.context) return;
        r.context->stack.clear();
        r.context->waitRaised = false;
        r.context->contendRaised = false;
    });
}

TId Threads::IdOfThreadObject(jthread thread) {
    const TId tag = trackObjects_ ? Vm::TagOf(thread, false) : 0;
    if (tag == 0) return 0;
    const auto lock = threads_.Locked();
    const auto it = idByTag_.find(tag);
    return it != idByTag_.end() ? it->second : 0;
}

void JNICALL Threads::OnThreadStart(jvmtiEnv *, JNIEnv *jni, jthread thread) {
    ThreadContext &ctx = ContextOf(jni);
    // The parent, when a probed Thread.start() site started this thread (its Thread
    // object was tagged there).
    TId parent = 0;
    if (Interactions::ParentsWanted() && thread != nullptr) {
        parent = Interactions::TakeParent(Vm::TagOf(thread, false));
        if (parent != 0) {
            const auto lock = threads_.Locked();
            threads_.Find(lock, ctx.id)->parent = parent;
        }
    }
    if (Vm::Core().IsEnabled(EV_THREAD_START)) RaiseStart(ctx, parent);
    Sampling::ThreadStarted();
}

void Threads::RaiseStart(const ThreadContext &ctx, TId parent) {
    std::string name, group;
    {
        const auto lock = threads_.Locked();
        const Record &r = *threads_.Find(lock, ctx.id);
        name = r.name;
        group = r.group;
    }
    SThreadStartEventData d;
    if (parent != 0) {
        d.parentThreadId = parent;
        d.validData |= DR_THREAD_PARENT_ID;
    }
    d.threadId = ctx.id;
    d.szThreadName = name.c_str();
    d.szThreadGroupName = group.c_str();
    d.validData |= DR_THREAD_ID | DR_THREAD_NAME | DR_THREAD_GROUP;
    if (Vm::Requests(EV_THREAD_START, DR_CPU_TIMESTAMP)) {
        d.uiCpuTimestamp = NowNs();
        d.validData |= DR_CPU_TIMESTAMP;
    }
    Vm::Core().Raise<IThreadStartEventObserver>(d);
}

void JNICALL Threads::OnThreadEnd(jvmtiEnv *, JNIEnv *jni, jthread) {
    Sampling::ThreadEnded();
    ThreadContext &ctx = ContextOf(jni);
    Calls::LeaveAll(jni, ctx);
    SThreadEndEventData d;
    d.threadId = ctx.id;
    d.validData = DR_THREAD_ID;
    if (Vm::Requests(EV_THREAD_END, DR_CPU_TIMESTAMP)) {
        d.uiCpuTimestamp = NowNs();
        d.validData |= DR_CPU_TIMESTAMP;
    }
    Vm::Core().Raise<IThreadEndEventObserver>(d);
    const auto lock = threads_.Locked();
    Record &r = *threads_.Find(lock, ctx.id);
    threads_.End(lock, r);
    if (r.tag != 0) idByTag_.erase(r.tag);
    tContext = nullptr;
    r.context.reset();
}

// ---- Data requests -------------------------------------------------------------------------

TResult Threads::Describe(TId id, BitSet requested, unsigned maxFrames, core::ThreadFacts &f) {
    JNIEnv *jni = Vm::Jni();
    if (jni == nullptr) return MRTE_ERROR_FAIL;
    bool alive = false;
    if (const TResult r = threads_.DescribeRecorded(id, f, alive); r != MRTE_RESULT_OK) return r;
    f.given |= DR_THREAD_GROUP;  // "" for a thread without a group
    if (!alive) return MRTE_RESULT_OK;
    jthread thread = nullptr;
    {
        const auto lock = threads_.Locked();
        if (const Record *rec = threads_.Find(lock, id); rec->thread) thread = jni->NewLocalRef(rec->thread);
    }
    if (thread == nullptr) return MRTE_RESULT_OK;
    const TResult r = DescribeLive(thread, requested, maxFrames, f);
    jni->DeleteLocalRef(thread);
    return r;
}

TResult Threads::DescribeLive(jthread thread, BitSet requested, unsigned maxFrames, core::ThreadFacts &f) {
    jvmtiEnv *jvmti = Vm::Jvmti();
    jint state = 0;
    if (jvmti->GetThreadState(thread, &state) == JVMTI_ERROR_NONE) {
        f.state = StateFromJvmti(state);
        f.given |= DR_THREAD_STATE;
    }
    if (requested & DR_VM_CALL_STACK) {
        const jint depth = maxFrames == 0 ? 4096 : static_cast<jint>(maxFrames);
        std::vector<jvmtiFrameInfo> frames(static_cast<std::size_t>(depth));
        jint count = 0;
        if (jvmti->GetStackTrace(thread, 0, depth, frames.data(), &count) == JVMTI_ERROR_NONE) {
            ClassRegistry::AppendFrames(frames.data(), count, f.stack);
            f.given |= DR_VM_CALL_STACK;
            jint all = 0;
            if (maxFrames != 0 && count == depth && jvmti->GetFrameCount(thread, &all) == JVMTI_ERROR_NONE) {
                f.stackDepth = static_cast<std::size_t>(all);
            }
        }
    }
    if (requested & DR_THREAD_CPU_TIME) {
        jlong cpu = 0;
        if (jvmti->GetThreadCpuTime(thread, &cpu) == JVMTI_ERROR_NONE) {
            f.cpuTimeNs = static_cast<std::uint64_t>(cpu);
            f.given |= DR_THREAD_CPU_TIME;
        }
    }
    return MRTE_RESULT_OK;
}

TResult Threads::List(std::vector<TId> &out) { return threads_.List(out); }

TResult Threads::CurrentThread(TId &id) {
    if (tContext != nullptr) {
        id = tContext->id;
        return MRTE_RESULT_OK;
    }
    JNIEnv *jni = Vm::Jni();
    if (jni == nullptr) return MRTE_ERROR_FAIL;
    id = ContextOf(jni).id;
    return MRTE_RESULT_OK;
}

TResult Threads::SuspendAll() {
    jvmtiEnv *jvmti = Vm::Jvmti();
    jvmtiCapabilities caps{};
    caps.can_suspend = 1;
    if (jvmti->AddCapabilities(&caps) != JVMTI_ERROR_NONE) return MRTE_ERROR_NOT_SUPPORTED;
    jint count = 0;
    jthread *threads = nullptr;
    if (jvmti->GetAllThreads(&count, &threads) != JVMTI_ERROR_NONE) return MRTE_ERROR_FAIL;
    JNIEnv *jni = Vm::Jni();
    jthread self = nullptr;
    jvmti->GetCurrentThread(&self);
    std::vector<jthread> others;
    for (jint i = 0; i < count; ++i) {
        if (self == nullptr || jni == nullptr || !jni->IsSameObject(threads[i], self)) others.push_back(threads[i]);
    }
    std::vector<jvmtiError> results(others.size());
    const jvmtiError e = jvmti->SuspendThreadList(static_cast<jint>(others.size()), others.data(), results.data());
    jvmti->Deallocate(reinterpret_cast<unsigned char *>(threads));
    return e == JVMTI_ERROR_NONE ? MRTE_RESULT_OK : MRTE_ERROR_FAIL;
}

TResult Threads::ResumeAll() {
    jvmtiEnv *jvmti = Vm::Jvmti();
    jint count = 0;
    jthread *threads = nullptr;
    if (jvmti->GetAllThreads(&count, &threads) != JVMTI_ERROR_NONE) return MRTE_ERROR_FAIL;
    std::vector<jvmtiError> results(static_cast<std::size_t>(count));
    const jvmtiError e = jvmti->ResumeThreadList(count, threads, results.data());
    jvmti->Deallocate(reinterpret_cast<unsigned char *>(threads));
    return e == JVMTI_ERROR_NONE || e == JVMTI_ERROR_MUST_POSSESS_CAPABILITY ? MRTE_RESULT_OK : MRTE_ERROR_FAIL;
}

}  // namespace martini::jvm
