// Modules: the module of each class, ModuleLoad, and GetModuleInfo (see modules.cpp
// for what a JVM module is and which lock guards what).
#pragma once

#include "classes.h"

#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace martini::jvm {

class Modules {
public:
    // Sets the class's module when it has none yet (empty before the live phase);
    // raises ModuleLoad for a module seen for the first time.
    static void Assign(JNIEnv *jni, jobject loader, jobject protectionDomain, const char *internalName,
                       ClassRecord &cls);
    static TResult Describe(TId id, core::ModuleFacts &f);

private:
    static std::string NameOf(JNIEnv *jni, jobject loader, jobject protectionDomain, const char *internalName);

    static inline std::recursive_mutex announcing_;
    static inline std::mutex mutex_;
    static inline std::vector<std::string> modules_;  // id - 1: the module's name
    static inline std::unordered_map<std::string, TId> moduleByName_;
};

}  // namespace martini::jvm
