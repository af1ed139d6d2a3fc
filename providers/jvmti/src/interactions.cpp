#include "interactions.h"

#include "jvm_support.h"
#include "threads.h"

namespace martini::jvm {

void Interactions::Decide() {
    interactions_ = Vm::Wants(EV_THREAD_INTERACTION);
    parents_ = Vm::Wants(EV_THREAD_START) && Vm::Requests(EV_THREAD_START, DR_THREAD_PARENT_ID);
}

SiteSelector Interactions::Selector(ClassLoad &load) {
    if (!Wanted()) return {};
    // The filters are asked once per method containing a candidate call site; its
    // sites get probes when some client wants the method, or (Thread.start() sites)
    // when some client wants thread parents.
    return [&load, interestByMethod = std::map<TId, ClientMask>()](
               const ClassDecl &decl, const MethodDecl &m, const CallSite &site) mutable -> std::int64_t {
        const TId methodId = load.ProbeableMethod(decl, m);
        if (methodId == 0) return kNoProbe;
        // java.lang.Thread's own methods call each other (join() -> join(0), sleep(ms,
        // ns) -> sleep(ms)): one interaction each, reported at the caller's site.
        if (decl.internalName == "java/lang/Thread" || decl.internalName == "java/lang/Object") return kNoProbe;
        auto known = interestByMethod.find(methodId);
        if (known == interestByMethod.end()) {
            ClientMask mask = 0;
            if (interactions_) {
                const std::string className = SourceName(decl.internalName);
                SThreadInteractionFilterData data{className.c_str(), m.name.c_str(), m.descriptor.c_str()};
                mask = Vm::Core().ThreadInteractionInterest(methodId, data);
            }
            known = interestByMethod.emplace(methodId, mask).first;
        }
        const bool parent = parents_ && site.kind == Interaction::kStart;
        if (known->second == 0 && !parent) return kNoProbe;
        return ProbeFor(methodId, site, known->second);
    };
}

std::int64_t Interactions::ProbeFor(TId methodId, const CallSite &site, ClientMask interest) {
    std::lock_guard lock(mutex_);
    const auto key = std::make_pair(methodId, site.offset);
    TId id = 0;
    if (auto it = siteByLocation_.find(key); it != siteByLocation_.end()) {
        id = it->second;  // retransformed: the same site, the same id
    } else {
        id = sites_.Add();
        if (id == 0) return kNoProbe;  // table full: the site is not reported
        siteByLocation_.emplace(key, id);
    }
    SiteRecord &r = *sites_.Get(id);
    r.methodId = methodId;
    r.kind = site.kind;
    r.opcode = site.opcode;
    r.owner = site.owner;
    r.name = site.name;
    r.interest = interest;
    return static_cast<std::int64_t>(id);
}

void Interactions::FindThreadClass(JNIEnv *jni) {
    core::OwnWorkScope own;  // FindClass may run class loaders' Java code: not the program's
    jclass thread = jni->FindClass("java/lang/Thread");
    if (thread == nullptr) {
        jni->ExceptionClear();
        return;
    }
    threadClass_ = static_cast<jclass>(jni->NewGlobalRef(thread));
    threadStart_ = jni->GetMethodID(thread, "start", "()V");
    threadInterrupt_ = jni->GetMethodID(thread, "interrupt", "()V");
    jni->ExceptionClear();
    jni->DeleteLocalRef(thread);
}

TId Interactions::TakeParent(TId threadTag) {
    if (threadTag == 0) return 0;
    std::lock_guard lock(mutex_);
    auto it = parentByThreadTag_.find(threadTag);
    if (it == parentByThreadTag_.end()) return 0;
    const TId parent = it->second;
    parentByThreadTag_.erase(it);
    return parent;
}

bool Interactions::ReachesThreadMethod(JNIEnv *jni, jobject receiver, const SiteRecord &site) {
    if (threadClass_ == nullptr || !jni->IsInstanceOf(receiver, threadClass_)) return false;
    // join is final in Thread: every join()V/(J)V/(JI)V on a Thread is Thread's.
    if (site.kind == Interaction::kJoin) return true;
    // start()/interrupt() may be overridden: the call reaches Thread's only when the
    // method it resolves to is (an override that calls super.start() is reported at
    // that invokespecial).
    if (site.opcode == kInvokespecialOp && site.owner == "java/lang/Thread") return true;
    jclass c = jni->GetObjectClass(receiver);
    if (site.opcode == kInvokespecialOp) {
        // super.start() through an intermediate class: resolve from that class.
        const std::string want = "L" + site.owner + ";";
        while (c != nullptr) {
            JvmtiString sig(Vm::Jvmti());
            if (Vm::Jvmti()->GetClassSignature(c, &sig.p, nullptr) == JVMTI_ERROR_NONE && sig.str() == want) break;
            jclass super = jni->GetSuperclass(c);
            jni->DeleteLocalRef(c);
            c = super;
        }
        if (c == nullptr) return false;
    }
    // HotSpot gives one jmethodID per method: an inherited method's is Thread's.
    jmethodID m = jni->GetMethodID(c, site.name.c_str(), "()V");
    if (jni->ExceptionCheck()) jni->ExceptionClear();
    jni->DeleteLocalRef(c);
    return m != nullptr && m == (site.kind == Interaction::kStart ? threadStart_ : threadInterrupt_);
}

void JNICALL Interactions::OnSite(JNIEnv *jni, jclass, jobject receiver, jint site) noexcept {
    Report(jni, receiver, site);
}

void JNICALL Interactions::OnStaticSite(JNIEnv *jni, jclass, jint site) noexcept { Report(jni, nullptr, site); }

void Interactions::Report(JNIEnv *jni, jobject receiver, std::int32_t siteId) {
    if (Vm::Dead()) return;  // after VmShutdown
    const SiteRecord *site = sites_.Get(static_cast<TId>(siteId));
    if (site == nullptr) return;
    const bool report = site->interest != 0 && Vm::Core().IsEnabled(EV_THREAD_INTERACTION);
    const bool parent = parents_ && site->kind == Interaction::kStart;
    if (!report && !parent) return;
    if (site->kind != Interaction::kSleep) {
        if (receiver == nullptr) return;  // the call throws NullPointerException
        const bool threadMethod = site->kind == Interaction::kStart || site->kind == Interaction::kJoin ||
                                  site->kind == Interaction::kInterrupt;
        if (threadMethod && !ReachesThreadMethod(jni, receiver, *site)) return;
    }
    const ThreadContext &ctx = Threads::Current(jni);
    const TId objectId = receiver != nullptr ? Vm::TagOf(receiver, true) : 0;
    if (parent && objectId != 0) {
        // Before start() runs: the new thread's ThreadStart takes it (TakeParent).
        std::lock_guard lock(mutex_);
        parentByThreadTag_[objectId] = ctx.id;
    }
    if (report) Raise(jni, receiver, objectId, ctx.id, *site);
}

void Interactions::Raise(JNIEnv *jni, jobject receiver, TId objectId, TId threadId, const SiteRecord &site) {
    SThreadInteractionEventData d;
    d.threadId = threadId;
    d.interactionType = static_cast<EThreadInteractionType>(site.kind);
    d.validData = DR_THREAD_ID | DR_INTERACTION_TYPE;
    if (receiver != nullptr) {
        jclass klass = jni->GetObjectClass(receiver);
        d.classId = ClassRegistry::ClassIdOf(jni, klass);
        jni->DeleteLocalRef(klass);
        d.objectId = objectId;
        d.validData |= DR_CLASS_ID;
        if (objectId != 0) d.validData |= DR_OBJECT_ID;
    }
    if (Vm::Requests(EV_THREAD_INTERACTION, DR_CPU_TIMESTAMP)) {
        d.uiCpuTimestamp = NowNs();
        d.validData |= DR_CPU_TIMESTAMP;
    }
    Vm::Core().Raise<IThreadInteractionEventObserver>(d, site.interest);
}

}  // namespace martini::jvm
