#include "threads.h"

#include "calls.h"
#include "sampling.h"

#include <pthread.h>

#include <algorithm>

#include <cstdlib>

namespace martini::mono {

constinit thread_local ThreadContext *tContext __attribute__((tls_model("initial-exec"))) = nullptr;

namespace {
// Set on a provider thread while it attaches, so that its thread_started hides it.
constinit thread_local bool tAttachingOwn __attribute__((tls_model("initial-exec"))) = false;
// A provider thread's context, kept across its attachments.
constinit thread_local ThreadContext *tOwnContext __attribute__((tls_model("initial-exec"))) = nullptr;
}  // namespace

void Threads::SetCallbacks(MonoProfilerHandle h) {
    // Always: thread ids and contexts are the provider's own need.
    mono_profiler_set_thread_started_callback(h, OnStarted);
    mono_profiler_set_thread_stopped_callback(h, OnStopped);
    mono_profiler_set_thread_name_callback(h, OnName);
}

ThreadContext *Threads::Make(uintptr_t tid, bool hidden) {
    auto ctx = std::make_unique<ThreadContext>();
    ctx->tid = tid;
    ctx->hidden = hidden;
    ctx->capacity = 256;
    ctx->frames = static_cast<Frame *>(std::malloc(sizeof(Frame) * ctx->capacity));
    if (ctx->frames == nullptr) ctx->capacity = 0;
    const auto lock = threads_.Locked();
    Record &r = threads_.Add(lock, tid);
    r.hidden = hidden;
    ctx->id = r.id;
    r.context = std::move(ctx);
    return r.context.get();
}

ThreadContext *Threads::Pending() {
    const auto self = static_cast<uintptr_t>(pthread_self());
    const auto lock = threads_.Locked();
    const Record *r = threads_.Live(lock, self);
    if (r == nullptr) return nullptr;
    ThreadContext *ctx = r->context.get();
    return ctx != nullptr && !ctx->started && !ctx->hidden ? ctx : nullptr;
}

void Threads::Publish(ThreadContext *ctx) {
    tContext = ctx;
    ctx->started = true;
    RaiseStart(ctx->id);
}

ThreadContext *Threads::Adopt() {
    // The thread's first event: its ThreadStart goes first. A thread Mono raised no
    // thread_started for (it ran before the module's callbacks were set) gets one now.
    if (ThreadContext *pending = Pending()) {
        Publish(pending);
        return pending;
    }
    if (Vm::Dead()) return nullptr;
    ThreadContext *ctx = Make(static_cast<uintptr_t>(pthread_self()), false);
    Publish(ctx);
    return ctx;
}

void Threads::RaiseStart(TId id) {
    if (!Vm::Wants(EV_THREAD_START)) return;
    Vm::RaiseOrQueue([id] {
        // The name as known when the event is delivered: before VmInit, "Main" and
        // "Finalizer" are named after thread_started but before the queue is replayed.
        const std::string name = NameOf(id);
        SThreadStartEventData d;
        d.threadId = id;
        d.validData = DR_THREAD_ID;
        const BitSet wanted = Vm::Core().RequestedData(EV_THREAD_START);
        core::Put(d, wanted, DR_THREAD_NAME, d.szThreadName, name.c_str());
        core::Put(d, wanted, DR_CPU_TIMESTAMP, d.uiCpuTimestamp, [] { return core::Clock::NowNs(); });
        Vm::Core().Raise<IThreadStartEventObserver>(d);
    });
}

void Threads::OnStarted(MonoProfiler *, uintptr_t tid) {
    // Raised on the new thread itself (threads.c), also for threads that attach. Its
    // ThreadStart waits for the name Mono raises next when the program named the
    // thread before starting it, or for the thread's first event.
    if (tAttachingOwn) return;  // AttachOwnThread sets the context
    ThreadContext *ctx = tContext != nullptr ? tContext : Pending();
    if (ctx == nullptr) ctx = Make(tid, false);
    Sampling::ThreadStarted(*ctx);  // its CPU clock, in CPU mode, and its samples
}

void Threads::End(ThreadContext &ctx) {
    if (ctx.ended) return;
    ctx.ended = true;
    if (!ctx.hidden) {
        Calls::LeaveAll(ctx);
        if (Vm::Wants(EV_THREAD_END)) {
            const TId id = ctx.id;
            Vm::RaiseOrQueue([id] {
                SThreadEndEventData d;
                d.threadId = id;
                d.validData = DR_THREAD_ID;
                core::Put(d, Vm::Core().RequestedData(EV_THREAD_END), DR_CPU_TIMESTAMP, d.uiCpuTimestamp,
                          [] { return core::Clock::NowNs(); });
                Vm::Core().Raise<IThreadEndEventObserver>(d);
            });
        }
    }
    const auto lock = threads_.Locked();
    if (Record *r = threads_.Find(lock, ctx.id)) threads_.End(lock, *r);
}

void Threads::OnStopped(MonoProfiler *, uintptr_t) {
    // On the exiting thread itself. The context stays (a late callback on this thread
    // finds it ended); its stack memory goes.
    Sampling::ThreadEnded();
    ThreadContext *ctx = tContext;
    if (ctx == nullptr) {
        ctx = Pending();  // a thread with no event at all: its ThreadStart, then its end
        if (ctx == nullptr) return;
        Publish(ctx);
    }
    if (ctx->hidden) {
        // The provider's own thread detaching: it may attach again.
        tContext = nullptr;
        return;
    }
    End(*ctx);
}

void Threads::OnName(MonoProfiler *, uintptr_t tid, const char *name) {
    {
        const auto lock = threads_.Locked();
        Record *r = threads_.Live(lock, tid);
        if (r == nullptr) return;
        r->name = name != nullptr ? name : "";
    }
    // Named on the thread itself before its first event: ThreadStart, with the name.
    if (tid == static_cast<uintptr_t>(pthread_self()) && tContext == nullptr) {
        if (ThreadContext *pending = Pending()) Publish(pending);
    }
}

std::string Threads::NameOf(TId id) { return threads_.NameOf(id); }

MonoThread *Threads::AttachOwnThread() {
    tAttachingOwn = true;
    MonoThread *t = mono_thread_attach(mono_get_root_domain());
    tAttachingOwn = false;
    if (tOwnContext == nullptr) tOwnContext = Make(static_cast<uintptr_t>(pthread_self()), true);
    tContext = tOwnContext;
    tContext->started = true;
    return t;
}

void Threads::DetachOwnThread(MonoThread *thread) {
    if (thread != nullptr) mono_thread_detach(thread);
    tContext = nullptr;
}

void Threads::EndAll(bool othersToo) {
    std::vector<ThreadContext *> contexts;
    {
        const auto lock = threads_.Locked();
        threads_.ForEach(lock, [&](Record &r) {
            if (r.alive && r.context && !r.context->ended && !r.context->hidden) contexts.push_back(r.context.get());
        });
    }
    std::sort(contexts.begin(), contexts.end(), [](auto *a, auto *b) { return a->id < b->id; });
    for (ThreadContext *ctx : contexts) {
        if (!ctx->started) {
            ctx->started = true;
            RaiseStart(ctx->id);
        }
        if (ctx == tContext || othersToo) {
            End(*ctx);
        } else {
            framesLeftOpen_ += ctx->depth;
        }
    }
}

TResult Threads::Describe(TId id, BitSet requested, unsigned maxFrames, core::ThreadFacts &f) {
    bool alive = false;
    const Record *record = nullptr;
    if (const TResult r = threads_.DescribeRecorded(id, f, alive, &record); r != MRTE_RESULT_OK) return r;
    const auto tid = static_cast<uintptr_t>(record->osKey);  // set once, at the record's making
    // The call stack: the calling thread's own, from its shadow stack (Mono's stack
    // walk finds no frames inside enter/leave). Other threads' stacks move under us.
    const ThreadContext *self = tContext;
    if ((requested & DR_VM_CALL_STACK) && self != nullptr && self->id == id) {
        f.stackDepth = self->depth;
        for (std::uint32_t i = self->depth; i > 0; --i) {
            if (maxFrames != 0 && f.stack.size() >= maxFrames) break;
            const Frame &fr = self->frames[i - 1];
            f.stack.push_back({static_cast<TId>(reinterpret_cast<std::uintptr_t>(fr.method)), ~0u, 0});
        }
        f.given |= DR_VM_CALL_STACK;
    }
    if ((requested & DR_THREAD_CPU_TIME) && alive) {
        clockid_t clock;
        timespec ts;
        if (pthread_getcpuclockid(static_cast<pthread_t>(tid), &clock) == 0 && clock_gettime(clock, &ts) == 0) {
            f.cpuTimeNs = std::uint64_t(ts.tv_sec) * 1000000000u + std::uint64_t(ts.tv_nsec);
            f.given |= DR_THREAD_CPU_TIME;
        }
    }
    return MRTE_RESULT_OK;
}

TResult Threads::List(std::vector<TId> &out) { return threads_.List(out); }

TResult Threads::CurrentThread(TId &id) {
    const ThreadContext *c = tContext;
    if (c == nullptr || c->hidden) return MRTE_ERROR_FAIL;
    id = c->id;
    return MRTE_RESULT_OK;
}

}  // namespace martini::mono
