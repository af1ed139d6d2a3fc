#include "vm.h"
#include "martini/core/log.h"

#include <cstdio>

namespace martini::jvm {

JNIEnv *Vm::Jni() {
    JNIEnv *jni = nullptr;
    if (vm_->GetEnv(reinterpret_cast<void **>(&jni), JNI_VERSION_1_8) != JNI_OK) return nullptr;
    return jni;
}

bool Vm::AddCapabilities() {
    if (jvmti_->AddCapabilities(&caps_) == JVMTI_ERROR_NONE) return true;
    core::LogLine("the JVM refused some capabilities; some events will be missing");
    return false;
}

TId Vm::TagOf(jobject object, bool create) {
    jlong tag = 0;
    if (object == nullptr || jvmti_->GetTag(object, &tag) != JVMTI_ERROR_NONE) return 0;
    if (tag == 0 && create) {
        tag = static_cast<jlong>(nextTag_.fetch_add(1, std::memory_order_relaxed));
        if (jvmti_->SetTag(object, tag) != JVMTI_ERROR_NONE) return 0;
    }
    return static_cast<TId>(tag);
}


}  // namespace martini::jvm
