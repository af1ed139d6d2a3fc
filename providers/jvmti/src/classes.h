// ClassRegistry: what the JVM loaded, as Martini ids. Owns the class and method
// records (names, descriptors, access, line tables, source files, jmethodIDs, JIT
// code ranges), the class loaders seen, the heap and monitor filters' answers per
// class, and the events that announce them (ClassLoad, NewMethod). Classes are
// declared from the class file at ClassFileLoadHook (Instrumentation) or from JVMTI
// (classes loaded before VMInit, methods seen first in a stack or a JIT event).
//
// Locks: mutex_ guards classes_, classByKey_, loaders_, methodByJmethod_, nativeByName_ and the
// appends to methods_ and to ClassRecord::methods. Records are never removed, and
// their names never change, so a record found under the lock is read after it
// without one. methods_ is read without a lock (RecordTable); the atomics in the
// records are written by the components named beside them.
#pragma once

#include "instrumenter.h"
#include "jvm_support.h"
#include "tables.h"

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace martini::jvm {

struct MethodRecord {
    TId classId = 0;
    std::string name;
    std::string descriptor;
    std::uint16_t access = 0;
    bool hasCode = false;
    std::vector<LineEntry> lines;  // of the class file as loaded (offsets of the original code)
    // The line table of the code the JVM runs, when probes moved its offsets (null:
    // `lines`). Set before the class's code reaches the JVM; a table replaced at a
    // retransformation is kept (a walk on another thread may still read it).
    std::atomic<const std::vector<LineEntry> *> runLines{nullptr};
    // The line of a bytecode index of the running code (a stack frame's location).
    unsigned RunLineAt(std::uint32_t bci) const {
        const std::vector<LineEntry> *run = runLines.load(std::memory_order_acquire);
        return LineAt(run != nullptr ? *run : lines, bci);
    }
    // A constructor that delegates with this(...) in a class with allocation probes:
    // the bytecode index of that call in the loaded code (-1: none). A frame of this
    // constructor stopped there belongs to the object being constructed (Allocations).
    std::atomic<std::int32_t> delegationBci{-1};
    std::atomic<jmethodID> jmethod{nullptr};
    std::atomic<std::uintptr_t> codeAddress{0};  // CompiledCode
    std::atomic<unsigned> codeSize{0};
};

struct ClassRecord {
    std::string name;          // source form: java.util.HashMap$Node
    std::string internalName;  // java/util/HashMap$Node
    std::string sourceFile;
    std::uint16_t access = 0;
    std::vector<TId> methods;
    // Heap and monitor filter answers for this class, decided once (InterestOf).
    std::atomic<ClientMask> heapInterest{0}, monitorInterest{0};
    std::atomic<bool> heapKnown{false}, monitorKnown{false};
    // 0 until known (classes loaded before VMInit: at their retransformation). Modules.
    std::atomic<TId> moduleId{0};
    // The loaded code has probes (Instrumentation): a detach retransforms it back.
    std::atomic<bool> probed{false};
};

// The class being loaded at ClassFileLoadHook, shared by the probe selectors of the
// components (Calls, Allocations, Interactions): declared on the first selector's
// call, so a class nobody asks about costs one parse.
struct ClassLoad {
    JNIEnv *jni = nullptr;
    jobject loader = nullptr;
    bool instrumenting = false;  // after VMInit's wiring; before it, no probe is placed
    TId classId = 0;
    bool newClass = false;
    bool declared = false;
    std::vector<TId> ids;  // per method of the declaration (0: not tracked)
    TId allocProbe = 0;    // set by the allocation selector

    void Declare(const ClassDecl &decl);
    // The method's id when probes may be placed in it now; 0 otherwise. Declares.
    TId ProbeableMethod(const ClassDecl &decl, const MethodDecl &m);
};

// A method of a class declared from JVMTI, for the call-graph filters.
struct DeclaredMethod {
    TId id;
    std::string name, descriptor;
    Martini::MPI::EMethodAccessType access;
};

class ClassRegistry {
public:
    using MethodTable = RecordTable<MethodRecord, 4096, 16384>;  // up to 64 Mi methods

    static void AddCapabilities(jvmtiCapabilities &caps) {
        caps.can_get_line_numbers = 1;
        caps.can_get_source_file_name = 1;
    }

    // Lock-free: null for an id never given.
    static MethodRecord *Method(TId id) { return methods_.Get(id); }
    static TId MethodCount() { return methods_.size(); }
    static ClassRecord *Class(TId id);
    // The class's method ids, copied under the lock (the list grows as methods are seen).
    static std::vector<TId> MethodsOf(const ClassRecord &cls) {
        std::lock_guard lock(mutex_);
        return cls.methods;
    }

    // ClassFileLoadHook (through ClassLoad::Declare).
    static void Declare(ClassLoad &load, const ClassDecl &decl);
    // ClassPrepare: binds the class's jmethodIDs to its method records; returns the
    // class's id (0: not declared).
    static TId Bind(JNIEnv *jni, jclass klass);
    // A class loaded before VMInit, declared from JVMTI as Declare would (the same key,
    // names and lines), so a later retransformation keeps its ids. `methods` gets its
    // methods with code. Returns the class id (0: not declared).
    static TId DeclareLoaded(JNIEnv *jni, jclass klass, const std::string &internalName,
                             std::vector<DeclaredMethod> &methods);

    static TId MethodIdOf(jmethodID m);  // 0 when not known; declares from JVMTI
    // A native function seen in a sampled stack, as a method: named by its symbol, no
    // class name, its library as the source file; one id per (library, symbol).
    static TId NativeMethod(const std::string &library, const std::string &symbol);
    static TId ClassIdOf(JNIEnv *jni, jclass klass);
    // The class id of an array class named by its descriptor ("[I"), for an array
    // probe in a class being loaded by `loader` (see Allocations' ArraySiteRecord).
    static TId ArrayClassId(JNIEnv *jni, jobject loader, const std::string &descriptor,
                            const std::string &sourceName);
    // Which clients want heap (EG_HEAP) or monitor (EG_MONITOR) events for objects of
    // this class: the filters are asked once per class, later events read one atomic.
    static ClientMask InterestOf(TId classId, Martini::MPI::EEventGroup group);
    static bool IsConstructorOf(TId methodId, TId classId);
    // JVMTI frames as MPI stack entries (method id, location, line).
    static void AppendFrames(const jvmtiFrameInfo *frames, jint count,
                             std::vector<Martini::MPI::SStackEntry> &out);
    // ClassLoad and NewMethod for a class declared now.
    static void RaiseDeclared(TId classId);

    // Detach: the heap and monitor filters' answers are the detached clients'; the next
    // attach asks its own clients again. Marks no class as probed.
    static void ForgetInterest();

    static TResult DescribeClass(TId id, core::ClassFacts &f);
    static TResult DescribeMethod(TId id, core::MethodFacts &f);

private:
    // "<loader index>/<internal name>". Caller holds mutex_.
    static std::string ClassKey(JNIEnv *jni, jobject loader, const std::string &internalName);
    // The record under `key`, made with these facts when first seen; true when made
    // now. Caller holds mutex_.
    static std::pair<TId, bool> DeclareClass(const std::string &key, const std::string &internalName,
                                             const std::string &sourceFile, std::uint16_t access);
    // A record with only a name (arrays, classes seen through an object). Caller holds mutex_.
    static TId AddNamedClass(const std::string &key, const std::string &internalName, const std::string &name);
    static TId MethodOf(const ClassRecord &cls, const std::string &name, const std::string &descriptor);
    // A method record filled from JVMTI (name, access, line table). Caller holds
    // mutex_. 0 when the table is full.
    static TId DeclareMethodFromJvmti(TId classId, jmethodID jm, const std::string &name,
                                      const std::string &desc, jint modifiers);
    static void RaiseClassLoad(TId classId, const ClassRecord &cls);
    static void RaiseNewMethods(TId classId, const ClassRecord &cls);

    static inline MethodTable methods_;
    static inline std::mutex mutex_;
    static inline std::vector<std::unique_ptr<ClassRecord>> classes_;  // id - 1
    static inline std::unordered_map<std::string, TId> classByKey_;   // ClassKey
    static inline std::vector<jweak> loaders_;                        // loader index - 1
    static inline std::unordered_map<jmethodID, TId> methodByJmethod_;
    static inline std::unordered_map<std::string, TId> nativeByName_;  // "library\0symbol"
};

}  // namespace martini::jvm
