#include "calls.h"

#include "jvm_support.h"

#include <algorithm>

namespace martini::jvm {

void Calls::AddCapabilities(jvmtiCapabilities &caps) {
    if (Vm::Requests(EV_METHOD_ENTER, DR_THREAD_CPU_TIME) || Vm::Requests(EV_METHOD_LEAVE, DR_THREAD_CPU_TIME)) {
        caps.can_get_current_thread_cpu_time = 1;
    }
}

ProbeSelector Calls::Selector(ClassLoad &load) {
    if (!wanted_) return {};
    return [&load](const ClassDecl &decl, const MethodDecl &m) -> std::int64_t {
        const TId id = load.ProbeableMethod(decl, m);
        if (id == 0) return kNoProbe;
        // java.lang.Object is never probed: HotSpot treats Object.<init> specially (C2
        // crashes compiling it with a handler added), and every `new` runs it.
        if (decl.internalName == "java/lang/Object") return kNoProbe;
        // Instrumentation time for the call graph: each client's filter is asked once
        // per method (the core caches the answer by id).
        const std::string className = SourceName(decl.internalName);
        SCallGraphFilterData data{className.c_str(), m.name.c_str(), m.descriptor.c_str(),
                                  AccessType(decl.accessFlags, m.accessFlags)};
        const ClientMask interest = Vm::Core().CallGraphInterest(id, data);
        interest_.Set(id, interest);
        return interest != 0 ? static_cast<std::int64_t>(id) : kNoProbe;
    };
}

bool Calls::AskAbout(const std::string &internalName, const std::vector<DeclaredMethod> &methods) {
    // Filters run outside the registry's lock (they are client code).
    const std::string className = SourceName(internalName);
    bool wanted = false;
    for (const DeclaredMethod &m : methods) {
        SCallGraphFilterData data{className.c_str(), m.name.c_str(), m.descriptor.c_str(), m.access};
        const ClientMask interest = Vm::Core().CallGraphInterest(m.id, data);
        interest_.Set(m.id, interest);
        wanted = wanted || interest != 0;
    }
    return wanted;
}

void JNICALL Calls::Enter(JNIEnv *jni, jclass, jint id) noexcept {
    if (Vm::Dead()) return;  // after VmShutdown
    ThreadContext &ctx = Threads::Current(jni);
    ctx.stack.push_back(id);
    const ClientMask interest = interest_.Get(static_cast<TId>(id));
    if (interest == 0) return;
    SMethodEnterEventData d;
    d.methodId = static_cast<TId>(id);
    d.threadId = ctx.id;
    d.validData = DR_METHOD_ID | DR_THREAD_ID;
    FillTimes(d, Vm::Core().RequestedData(EV_METHOD_ENTER), Vm::Jvmti());
    Vm::Core().Raise<IMethodEnterEventObserver>(d, interest);
}

void Calls::Leave(JNIEnv *jni, std::int32_t id, bool exceptional) noexcept {
    if (Vm::Dead()) return;
    ThreadContext &ctx = Threads::Current(jni);
    // The leave pops through to its own frame: frames above it were left by an
    // exception the probes could not see (thrown by a super() call), so they are
    // reported as exceptional exits first, innermost first. A leave whose enter was
    // never seen (the method was instrumented while running) is ignored. The search
    // starts at the innermost frame, which is the common case's match.
    auto it = std::find(ctx.stack.rbegin(), ctx.stack.rend(), id);
    if (it == ctx.stack.rend()) return;
    const std::size_t keep = static_cast<std::size_t>(ctx.stack.rend() - it) - 1;
    const BitSet wanted = Vm::Core().RequestedData(EV_METHOD_LEAVE);
    while (ctx.stack.size() > keep) {
        const std::int32_t top = ctx.stack.back();
        ctx.stack.pop_back();
        const ClientMask interest = interest_.Get(static_cast<TId>(top));
        if (interest == 0) continue;
        SMethodLeaveEventData d;
        d.methodId = static_cast<TId>(top);
        d.threadId = ctx.id;
        d.validData = DR_METHOD_ID | DR_THREAD_ID;
        d.bIsExceptionExit = top != id || exceptional;
        FillTimes(d, wanted, Vm::Jvmti());
        Vm::Core().Raise<IMethodLeaveEventObserver>(d, interest);
    }
}

void JNICALL Calls::LeaveNormal(JNIEnv *jni, jclass, jint id) noexcept { Leave(jni, id, false); }
void JNICALL Calls::LeaveExceptional(JNIEnv *jni, jclass, jint id) noexcept { Leave(jni, id, true); }

}  // namespace martini::jvm
