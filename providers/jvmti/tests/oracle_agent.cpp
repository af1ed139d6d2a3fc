// Test oracle: a plain JVMTI agent that counts MethodEntry events (the slow, exact
// JVMTI way) for the classes whose signature starts with a prefix, and writes
// "<class>.<method><descriptor>\t<count>" lines at VM death.
//   -agentpath:liboracle_agent.so=<signature prefix>,<output file>
#include <jvmti.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>

namespace {

std::string g_prefix, g_out;
std::mutex g_mutex;
std::unordered_map<jmethodID, std::string> g_names;  // "" for methods outside the prefix
std::map<std::string, unsigned long> g_counts;

void JNICALL OnMethodEntry(jvmtiEnv *jvmti, JNIEnv *, jthread, jmethodID method) {
    std::lock_guard lock(g_mutex);
    auto it = g_names.find(method);
    if (it == g_names.end()) {
        std::string key;
        jclass klass = nullptr;
        char *sig = nullptr, *name = nullptr, *desc = nullptr;
        if (jvmti->GetMethodDeclaringClass(method, &klass) == JVMTI_ERROR_NONE &&
            jvmti->GetClassSignature(klass, &sig, nullptr) == JVMTI_ERROR_NONE &&
            std::strncmp(sig, g_prefix.c_str(), g_prefix.size()) == 0 &&
            jvmti->GetMethodName(method, &name, &desc, nullptr) == JVMTI_ERROR_NONE) {
            std::string cls(sig + 1, std::strlen(sig) - 2);
            for (char &c : cls) c = c == '/' ? '.' : c;
            key = cls + "." + name + desc;
        }
        for (char *p : {sig, name, desc}) {
            if (p) jvmti->Deallocate(reinterpret_cast<unsigned char *>(p));
        }
        it = g_names.emplace(method, key).first;
    }
    if (!it->second.empty()) ++g_counts[it->second];
}

void JNICALL OnVmDeath(jvmtiEnv *, JNIEnv *) {
    std::lock_guard lock(g_mutex);
    FILE *f = std::fopen(g_out.c_str(), "w");
    if (!f) return;
    for (const auto &[k, v] : g_counts) std::fprintf(f, "%s\t%lu\n", k.c_str(), v);
    std::fclose(f);
}

}  // namespace

extern "C" JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *) {
    const std::string opts = options ? options : "";
    const auto comma = opts.find(',');
    if (comma == std::string::npos) return JNI_ERR;
    g_prefix = opts.substr(0, comma);
    g_out = opts.substr(comma + 1);
    jvmtiEnv *jvmti = nullptr;
    if (vm->GetEnv(reinterpret_cast<void **>(&jvmti), JVMTI_VERSION_11) != JNI_OK) return JNI_ERR;
    jvmtiCapabilities caps{};
    caps.can_generate_method_entry_events = 1;
    jvmti->AddCapabilities(&caps);
    jvmtiEventCallbacks cb{};
    cb.MethodEntry = OnMethodEntry;
    cb.VMDeath = OnVmDeath;
    jvmti->SetEventCallbacks(&cb, sizeof cb);
    jvmti->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_METHOD_ENTRY, nullptr);
    jvmti->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_VM_DEATH, nullptr);
    return JNI_OK;
}
