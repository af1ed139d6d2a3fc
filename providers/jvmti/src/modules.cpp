// Modules: MPI's module is where code comes from; on the JVM that is a class's JPMS
// module ("java.base", "jdk.compiler", an application's named module) or, for a class
// in an unnamed module, the class-path entry (jar or class directory) its loader found
// it in: its protection domain's code source. Owns the module names and ModuleLoad.
//
// Locks: announcing_ (recursive) is held from the module decision to its ModuleLoad;
// mutex_ guards modules_ and moduleByName_. Everything here reads fields through JNI
// and asks JVMTI; no Java code runs, so no probe fires and no class loads while a class
// is being loaded.
#include "modules.h"

#include "jvm_support.h"

#include <cstring>
#include <mutex>

namespace martini::jvm {
namespace {

// Field ids of the JDK classes read below, resolved once in the live phase. A field
// that is not found (another JDK's layout) leaves its id null and that source unused.
struct ModuleFields {
    jfieldID moduleName = nullptr;    // java.lang.Module.name
    jfieldID codeSource = nullptr;    // java.security.ProtectionDomain.codesource
    jfieldID location = nullptr;      // java.security.CodeSource.location
    jfieldID urlProtocol = nullptr;   // java.net.URL.protocol
    jfieldID urlPath = nullptr;       // java.net.URL.path
};

jfieldID FieldOf(JNIEnv *jni, const char *cls, const char *name, const char *sig) {
    core::OwnWorkScope own;  // FindClass may run class loaders' Java code: not the program's
    jclass c = jni->FindClass(cls);
    if (c == nullptr) {
        jni->ExceptionClear();
        return nullptr;
    }
    jfieldID f = jni->GetFieldID(c, name, sig);
    if (f == nullptr) jni->ExceptionClear();
    jni->DeleteLocalRef(c);
    return f;
}

const ModuleFields &Fields(JNIEnv *jni) {
    static ModuleFields fields;
    static std::once_flag once;
    std::call_once(once, [&] {
        fields.moduleName = FieldOf(jni, "java/lang/Module", "name", "Ljava/lang/String;");
        fields.codeSource = FieldOf(jni, "java/security/ProtectionDomain", "codesource", "Ljava/security/CodeSource;");
        fields.location = FieldOf(jni, "java/security/CodeSource", "location", "Ljava/net/URL;");
        fields.urlProtocol = FieldOf(jni, "java/net/URL", "protocol", "Ljava/lang/String;");
        fields.urlPath = FieldOf(jni, "java/net/URL", "path", "Ljava/lang/String;");
    });
    return fields;
}

// A String field of `object`, or "" when absent.
std::string StringField(JNIEnv *jni, jobject object, jfieldID field) {
    if (object == nullptr || field == nullptr) return {};
    auto s = static_cast<jstring>(jni->GetObjectField(object, field));
    if (s == nullptr) return {};
    std::string out;
    if (const char *chars = jni->GetStringUTFChars(s, nullptr)) {
        out = chars;
        jni->ReleaseStringUTFChars(s, chars);
    }
    jni->DeleteLocalRef(s);
    return out;
}

jobject ObjectField(JNIEnv *jni, jobject object, jfieldID field) {
    return object != nullptr && field != nullptr ? jni->GetObjectField(object, field) : nullptr;
}

// "/tmp/my%20app/classes/" -> "/tmp/my app/classes" (a URL path, percent-encoded).
std::string PathFromUrl(const std::string &path) {
    std::string out;
    for (std::size_t i = 0; i < path.size(); ++i) {
        auto hex = [](char c) -> int {
            if (c >= '0' && c <= '9') return c - '0';
            if (c >= 'a' && c <= 'f') return c - 'a' + 10;
            if (c >= 'A' && c <= 'F') return c - 'A' + 10;
            return -1;
        };
        if (path[i] == '%' && i + 2 < path.size() && hex(path[i + 1]) >= 0 && hex(path[i + 2]) >= 0) {
            out.push_back(static_cast<char>(hex(path[i + 1]) * 16 + hex(path[i + 2])));
            i += 2;
        } else {
            out.push_back(path[i]);
        }
    }
    while (out.size() > 1 && out.back() == '/') out.pop_back();
    return out;
}

}  // namespace

std::string Modules::NameOf(JNIEnv *jni, jobject loader, jobject protectionDomain, const char *internalName) {
    jvmtiEnv *jvmti = Vm::Jvmti();
    jvmtiPhase phase{};
    if (jni == nullptr || jvmti->GetPhase(&phase) != JVMTI_ERROR_NONE || phase != JVMTI_PHASE_LIVE) return {};
    const ModuleFields &f = Fields(jni);
    // A named module: the loader defines the class's package in it.
    const char *slash = std::strrchr(internalName, '/');
    if (slash != nullptr) {
        const std::string package(internalName, static_cast<std::size_t>(slash - internalName));
        jobject module = nullptr;
        if (jvmti->GetNamedModule(loader, package.c_str(), &module) == JVMTI_ERROR_NONE && module != nullptr) {
            std::string name = StringField(jni, module, f.moduleName);
            jni->DeleteLocalRef(module);
            if (!name.empty()) return name;
        }
    }
    // An unnamed module: the jar or directory of the class's code source.
    jobject codeSource = ObjectField(jni, protectionDomain, f.codeSource);
    jobject url = ObjectField(jni, codeSource, f.location);
    std::string where;
    if (url != nullptr) {
        const std::string protocol = StringField(jni, url, f.urlProtocol);
        const std::string path = StringField(jni, url, f.urlPath);
        if (!path.empty()) where = protocol == "file" ? PathFromUrl(path) : protocol + ":" + path;
    }
    if (url != nullptr) jni->DeleteLocalRef(url);
    if (codeSource != nullptr) jni->DeleteLocalRef(codeSource);
    if (!where.empty()) return where;
    // Classes defined without a code source: the boot class path's, and classes made
    // at run time (reflection accessors, proxies, defineClass without a domain).
    return loader == nullptr ? "(bootstrap class path)" : "(no code source)";
}

void Modules::Assign(JNIEnv *jni, jobject loader, jobject protectionDomain, const char *internalName,
                     ClassRecord &cls) {
    // Held until ModuleLoad is delivered: a class of the module loading on another
    // thread meanwhile waits, so no ClassLoad names a module before its ModuleLoad.
    // Recursive: a ModuleLoad handler may cause a class load on this thread.
    std::lock_guard announcing(announcing_);
    if (cls.moduleId.load(std::memory_order_acquire) != 0) return;
    const std::string name = NameOf(jni, loader, protectionDomain, internalName);
    if (name.empty()) return;  // before the live phase: at the class's retransformation
    TId moduleId = 0;
    bool isNew = false;
    {
        std::lock_guard lock(mutex_);
        auto [it, inserted] = moduleByName_.emplace(name, static_cast<TId>(modules_.size() + 1));
        if (inserted) modules_.push_back(name);
        moduleId = it->second;
        isNew = inserted;
    }
    cls.moduleId.store(moduleId, std::memory_order_release);
    if (!isNew || !Vm::Core().IsEnabled(EV_MODULE_LOAD)) return;
    SModuleLoadEventData d;
    d.moduleId = moduleId;
    d.szModuleName = name.c_str();
    d.validData = DR_MODULE_ID | DR_MODULE_NAME;
    Vm::Core().Raise<IModuleLoadEventObserver>(d);
}

TResult Modules::Describe(TId id, core::ModuleFacts &f) {
    std::lock_guard lock(mutex_);
    if (id == 0 || id > modules_.size()) return MRTE_ERROR_ILLEGAL_ID;
    f.name = modules_[id - 1];
    f.given = DR_MODULE_NAME;
    return MRTE_RESULT_OK;
}

}  // namespace martini::jvm
