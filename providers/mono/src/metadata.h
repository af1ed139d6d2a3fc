// Metadata: modules (Mono images), classes and methods as Martini knows them, their
// ids (the MonoImage, MonoClass and MonoMethod pointers: Mono never frees them while a
// profiler is loaded), names in source form, signatures, access types, source files and
// line tables (Mono's debug info), ModuleLoad, ClassLoad and NewMethod.
//
// Locks: mutex_ guards the records. Names are computed outside it (runtime calls).
// Never called from a signal handler.
#pragma once

#include "vm.h"

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace martini::mono {

struct MethodInfo {
    TId id = 0;
    MonoMethod *method = nullptr;
    std::string name;       // "Add", ".ctor"
    std::string signature;  // "(int,int)int"
    std::string className;  // source form
    TId classId = 0;
    TId moduleId = 0;
    EMethodAccessType access = MAT_NONE;
    bool wrapper = false;  // a runtime wrapper ("(wrapper runtime-invoke) ...")
    bool native = false;   // an icall or P/Invoke: its code is a wrapper's
};

class Metadata {
public:
    static void SetCallbacks(MonoProfilerHandle h);

    static TId IdOf(MonoMethod *m) { return static_cast<TId>(reinterpret_cast<std::uintptr_t>(m)); }
    static TId IdOf(MonoClass *k) { return static_cast<TId>(reinterpret_cast<std::uintptr_t>(k)); }
    static TId IdOf(MonoImage *i) { return static_cast<TId>(reinterpret_cast<std::uintptr_t>(i)); }

    // The method's facts, registered (and NewMethod raised, or queued before VmInit)
    // the first time it is seen. Never null for a non-null method.
    static const MethodInfo *Method(MonoMethod *m);
    // The method's facts when it is registered already, else null; no runtime call
    // (any thread, also one Mono does not know).
    static const MethodInfo *Known(MonoMethod *m);
    // The class's id, registered (ClassLoad raised if Mono did not) on first sight.
    static TId Class(MonoClass *k);
    static std::string ClassName(MonoClass *k);  // source form: System.Collections.Generic.List`1, A.Outer+Inner

    static TResult DescribeModule(TId id, core::ModuleFacts &f);
    static TResult DescribeClass(TId id, BitSet requested, core::ClassFacts &f);
    static TResult DescribeMethod(TId id, BitSet requested, core::MethodFacts &f);

    // The line table (IL offset -> line) and source file of a method, from Mono's debug
    // info; empty without symbols (.mdb/.pdb) or when debugging is off. Cached. From a
    // thread Mono does not know, only what is cached; `runtimeThread`: the caller knows
    // Mono runs this thread (a JIT callback) before the thread's first event.
    static void Lines(const MethodInfo &m, std::vector<SLineNumberTableEntry> &lines, std::string &sourceFile,
                      bool runtimeThread = false);
    // The source line of an IL offset (0 when unknown).
    static unsigned LineAt(MonoMethod *m, unsigned ilOffset);

private:
    struct ClassRecord {
        TId id = 0;
        MonoClass *klass = nullptr;
        std::string name;
        TId moduleId = 0;
        bool sourceKnown = false;
        std::string sourceFile;
    };
    struct ModuleRecord {
        TId id = 0;
        std::string name;
    };
    struct LineCache {
        bool known = false;
        std::vector<SLineNumberTableEntry> lines;
        std::string sourceFile;
    };
    static void OnImageLoaded(MonoProfiler *, MonoImage *image);
    static void OnClassLoaded(MonoProfiler *, MonoClass *klass);
    static void RaiseNewMethod(TId id);
    static ClassRecord *FindClass(TId id);  // mutex_ held

    static inline std::mutex mutex_;
    static inline std::unordered_map<TId, std::unique_ptr<MethodInfo>> methods_;
    static inline std::unordered_map<TId, ClassRecord> classes_;
    static inline std::unordered_map<TId, ModuleRecord> modules_;
    static inline std::unordered_map<TId, LineCache> lines_;
};

}  // namespace martini::mono
