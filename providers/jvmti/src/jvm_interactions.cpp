// The JVM provider: ThreadInteraction events from site probes, and thread parents.
#include "jvm_provider.h"
#include "jvm_support.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>

namespace martini::jvm {

// ---- Thread interactions -------------------------------------------------------------

std::int64_t JvmProvider::SiteProbeFor(TId methodId, const CallSite &site, ClientMask interest) {
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

void JvmProvider::SetThreadClass(JNIEnv *jni) {
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

bool JvmProvider::ReachesThreadMethod(JNIEnv *jni, jobject receiver, const SiteRecord &site) {
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
            JvmtiString sig(jvmti_);
            if (jvmti_->GetClassSignature(c, &sig.p, nullptr) == JVMTI_ERROR_NONE && sig.str() == want) break;
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

void JvmProvider::Interaction(JNIEnv *jni, jobject receiver, std::int32_t siteId) noexcept {
    if (dead_.load(std::memory_order_relaxed)) return;  // after VmShutdown
    const SiteRecord *site = sites_.Get(static_cast<TId>(siteId));
    if (site == nullptr) return;
    const bool report = site->interest != 0 && core_->IsEnabled(EV_THREAD_INTERACTION);
    const bool parent = parents_ && site->kind == Interaction::kStart;
    if (!report && !parent) return;
    if (site->kind != Interaction::kSleep) {
        if (receiver == nullptr) return;  // the call throws NullPointerException
        const bool threadMethod = site->kind == Interaction::kStart || site->kind == Interaction::kJoin ||
                                  site->kind == Interaction::kInterrupt;
        if (threadMethod && !ReachesThreadMethod(jni, receiver, *site)) return;
    }
    ThreadContext &ctx = CurrentContext(*this, jni);
    TId objectId = 0;
    if (receiver != nullptr) objectId = TagOf(jni, receiver, true);
    if (parent && objectId != 0) {
        // Before start() runs: the new thread's ThreadStart finds it (OnThreadStart).
        std::lock_guard lock(mutex_);
        parentByThreadTag_[objectId] = ctx.id;
    }
    if (!report) return;
    SThreadInteractionEventData d;
    d.threadId = ctx.id;
    d.interactionType = static_cast<EThreadInteractionType>(site->kind);
    d.validData = DR_THREAD_ID | DR_INTERACTION_TYPE;
    if (receiver != nullptr) {
        jclass klass = jni->GetObjectClass(receiver);
        d.classId = ClassIdOf(jni, klass);
        jni->DeleteLocalRef(klass);
        d.objectId = objectId;
        d.validData |= DR_CLASS_ID;
        if (objectId != 0) d.validData |= DR_OBJECT_ID;
    }
    if (core_->RequestedData(EV_THREAD_INTERACTION) & DR_CPU_TIMESTAMP) {
        d.uiCpuTimestamp = NowNs();
        d.validData |= DR_CPU_TIMESTAMP;
    }
    core_->Raise<IThreadInteractionEventObserver>(d, site->interest);
}

}  // namespace martini::jvm
