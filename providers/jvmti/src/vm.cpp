#include "vm.h"
#include "martini/core/log.h"

#include <cstdio>

namespace martini::jvm {

JNIEnv *Vm::Jni() {
    JNIEnv *jni = nullptr;
    if (vm_->GetEnv(reinterpret_cast<void **>(&jni), JNI_VERSION_1_8) != JNI_OK) return nullptr;
    return jni;
}

bool Vm::AddCapabilities(bool live) {
    if (live) {
        // Attached: some capabilities exist only in the OnLoad phase (HotSpot offers
        // most in the live phase). Ask for what is offered, and say what is not.
        jvmtiCapabilities potential{};
        if (jvmti_->GetPotentialCapabilities(&potential) == JVMTI_ERROR_NONE) {
            const auto *want = reinterpret_cast<const unsigned char *>(&caps_);
            const auto *can = reinterpret_cast<const unsigned char *>(&potential);
            bool missing = false;
            for (std::size_t i = 0; i < sizeof caps_; ++i) missing = missing || (want[i] & ~can[i]) != 0;
            if (missing) {
                core::LogLine("attached: this JVM does not offer every capability in its live phase; "
                              "some events will be missing");
                auto *mine = reinterpret_cast<unsigned char *>(&caps_);
                for (std::size_t i = 0; i < sizeof caps_; ++i) mine[i] &= can[i];
            }
        }
    }
    if (jvmti_->AddCapabilities(&caps_) == JVMTI_ERROR_NONE) return true;
    core::LogLine("the JVM refused some capabilities; some events will be missing");
    return false;
}

TId Vm::TagOf(jobject object, bool create) {
    jlong tag = 0;
    if (object == nullptr || jvmti_->GetTag(object, &tag) != JVMTI_ERROR_NONE) return 0;
    if (tag == 0 && create) {
        // Read again and set under one lock: two threads tagging one object at once (two
        // threads contending for one monitor) would each set a tag of their own, and the
        // first would report an id the object no longer has.
        std::lock_guard lock(tagMutex_);
        if (jvmti_->GetTag(object, &tag) != JVMTI_ERROR_NONE) return 0;
        if (tag != 0) return static_cast<TId>(tag);
        tag = static_cast<jlong>(nextTag_.fetch_add(1, std::memory_order_relaxed));
        if (jvmti_->SetTag(object, tag) != JVMTI_ERROR_NONE) return 0;
    }
    return static_cast<TId>(tag);
}


}  // namespace martini::jvm
