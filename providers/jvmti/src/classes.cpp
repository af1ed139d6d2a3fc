#include "classes.h"

#include "jvm_support.h"
#include "modules.h"
#include "threads.h"

#include <algorithm>
#include <map>

namespace martini::jvm {

// ---- The class being loaded ------------------------------------------------------------

void ClassLoad::Declare(const ClassDecl &decl) {
    if (declared) return;
    declared = true;
    ClassRegistry::Declare(*this, decl);
}

TId ClassLoad::ProbeableMethod(const ClassDecl &decl, const MethodDecl &m) {
    Declare(decl);
    const auto i = static_cast<std::size_t>(&m - decl.methods.data());
    if (!instrumenting || i >= ids.size() || ClassRegistry::Method(ids[i]) == nullptr) return 0;
    return ids[i];
}

// ---- Declaring ---------------------------------------------------------------------------

ClassRecord *ClassRegistry::Class(TId id) {
    std::lock_guard lock(mutex_);
    return id != 0 && id <= classes_.size() ? classes_[id - 1].get() : nullptr;
}

std::string ClassRegistry::ClassKey(JNIEnv *jni, jobject loader, const std::string &internalName) {
    std::size_t index = 0;  // 0: the bootstrap loader
    if (loader != nullptr && jni != nullptr) {
        for (std::size_t i = 0; i < loaders_.size(); ++i) {
            if (jni->IsSameObject(loader, loaders_[i])) {
                index = i + 1;
                break;
            }
        }
        if (index == 0) {
            loaders_.push_back(jni->NewWeakGlobalRef(loader));
            index = loaders_.size();
        }
    }
    return std::to_string(index) + "/" + internalName;
}

void ClassRegistry::Declare(ClassLoad &load, const ClassDecl &decl) {
    std::lock_guard lock(mutex_);
    std::tie(load.classId, load.newClass) = DeclareClass(ClassKey(load.jni, load.loader, decl.internalName),
                                                         decl.internalName, decl.sourceFile, decl.accessFlags);
    ClassRecord &cls = *classes_[load.classId - 1];
    load.ids.assign(decl.methods.size(), 0);
    for (std::size_t i = 0; i < decl.methods.size(); ++i) {
        const MethodDecl &m = decl.methods[i];
        // A class seen again (retransformed, or defined again by its loader) keeps its ids.
        load.ids[i] = MethodOf(cls, m.name, m.descriptor);
        if (load.ids[i] != 0) continue;
        const TId id = methods_.Add();
        if (id == 0) continue;  // table full: the method is not tracked
        MethodRecord &r = *methods_.Get(id);
        r.classId = load.classId;
        r.name = m.name;
        r.descriptor = m.descriptor;
        r.access = m.accessFlags;
        r.hasCode = m.hasCode;
        r.lines = m.lines;
        cls.methods.push_back(id);
        load.ids[i] = id;
    }
}

std::pair<TId, bool> ClassRegistry::DeclareClass(const std::string &key, const std::string &internalName,
                                                 const std::string &sourceFile, std::uint16_t access) {
    if (auto found = classByKey_.find(key); found != classByKey_.end()) return {found->second, false};
    auto cls = std::make_unique<ClassRecord>();
    cls->internalName = internalName;
    cls->name = SourceName(internalName);
    cls->sourceFile = sourceFile;
    cls->access = access;
    classes_.push_back(std::move(cls));
    const TId classId = classes_.size();
    classByKey_.emplace(key, classId);
    return {classId, true};
}

TId ClassRegistry::AddNamedClass(const std::string &key, const std::string &internalName, const std::string &name) {
    auto cls = std::make_unique<ClassRecord>();
    cls->internalName = internalName;
    cls->name = name;
    classes_.push_back(std::move(cls));
    classByKey_.emplace(key, classes_.size());
    return classes_.size();
}

TId ClassRegistry::NativeMethod(const std::string &library, const std::string &symbol) {
    std::lock_guard lock(mutex_);
    const std::string key = "\x01native:" + library;  // no class key starts with \x01
    TId classId = 0;
    if (auto it = classByKey_.find(key); it != classByKey_.end()) {
        classId = it->second;
    } else {
        classId = AddNamedClass(key, "", "");
        classes_[classId - 1]->sourceFile = library;
    }
    // One lookup (a library's methods are many: MethodOf would make naming them quadratic).
    auto [known, added] = nativeByName_.try_emplace(library + '\0' + symbol, 0);
    if (!added && known->second != 0) return known->second;
    ClassRecord &cls = *classes_[classId - 1];
    const TId id = methods_.Add();
    if (id == 0) return 0;
    known->second = id;
    MethodRecord &r = *methods_.Get(id);
    r.classId = classId;
    r.name = symbol;
    r.access = kAccNative;
    cls.methods.push_back(id);
    return id;
}

TId ClassRegistry::MethodOf(const ClassRecord &cls, const std::string &name, const std::string &descriptor) {
    for (TId id : cls.methods) {
        const MethodRecord *r = methods_.Get(id);
        if (r && r->name == name && r->descriptor == descriptor) return id;
    }
    return 0;
}

TId ClassRegistry::DeclareMethodFromJvmti(TId classId, jmethodID jm, const std::string &name,
                                          const std::string &desc, jint modifiers) {
    const TId id = methods_.Add();
    if (id == 0) return 0;
    MethodRecord &r = *methods_.Get(id);
    r.classId = classId;
    r.name = name;
    r.descriptor = desc;
    r.access = static_cast<std::uint16_t>(modifiers);
    r.hasCode = (modifiers & (kAccNative | kAccAbstract)) == 0;
    jvmtiEnv *jvmti = Vm::Jvmti();
    jint entries = 0;
    jvmtiLineNumberEntry *table = nullptr;
    if (r.hasCode && jvmti->GetLineNumberTable(jm, &entries, &table) == JVMTI_ERROR_NONE) {
        for (jint i = 0; i < entries; ++i) {
            r.lines.push_back({static_cast<std::uint32_t>(table[i].start_location),
                               static_cast<std::uint32_t>(table[i].line_number)});
        }
        jvmti->Deallocate(reinterpret_cast<unsigned char *>(table));
        std::sort(r.lines.begin(), r.lines.end(), [](auto &a, auto &b) { return a.offset < b.offset; });
    }
    classes_[classId - 1]->methods.push_back(id);
    return id;
}

namespace {

// The class's internal name and its loader (a local reference for the caller to
// delete; null for the bootstrap loader). False when JVMTI cannot name the class.
bool NameAndLoader(jclass klass, std::string &internal, jobject &loader) {
    jvmtiEnv *jvmti = Vm::Jvmti();
    JvmtiString sig(jvmti);
    if (jvmti->GetClassSignature(klass, &sig.p, nullptr) != JVMTI_ERROR_NONE) return false;
    internal = InternalFromSignature(sig.p);
    loader = nullptr;
    jvmti->GetClassLoader(klass, &loader);
    return true;
}

}  // namespace

TId ClassRegistry::Bind(JNIEnv *jni, jclass klass) {
    jvmtiEnv *jvmti = Vm::Jvmti();
    std::string internal;
    jobject loader = nullptr;
    if (!NameAndLoader(klass, internal, loader)) return 0;
    jint count = 0;
    jmethodID *jmethods = nullptr;
    if (jvmti->GetClassMethods(klass, &count, &jmethods) != JVMTI_ERROR_NONE) {
        if (loader) jni->DeleteLocalRef(loader);
        return 0;
    }
    TId classId = 0;
    {
        std::lock_guard lock(mutex_);
        auto found = classByKey_.find(ClassKey(jni, loader, internal));
        if (found != classByKey_.end()) {
            classId = found->second;
            std::unordered_map<std::string, TId> byName;  // "name(descriptor)" -> id
            for (TId id : classes_[classId - 1]->methods) {
                if (const MethodRecord *r = methods_.Get(id)) byName.emplace(r->name + r->descriptor, id);
            }
            for (jint i = 0; i < count; ++i) {
                JvmtiString name(jvmti), desc(jvmti);
                if (jvmti->GetMethodName(jmethods[i], &name.p, &desc.p, nullptr) != JVMTI_ERROR_NONE) continue;
                auto it = byName.find(name.str() + desc.str());
                if (it == byName.end()) continue;
                methods_.Get(it->second)->jmethod.store(jmethods[i], std::memory_order_release);
                methodByJmethod_[jmethods[i]] = it->second;
            }
        }
    }
    jvmti->Deallocate(reinterpret_cast<unsigned char *>(jmethods));
    if (loader) jni->DeleteLocalRef(loader);
    return classId;
}

TId ClassRegistry::DeclareLoaded(JNIEnv *jni, jclass klass, const std::string &internal,
                                 std::vector<DeclaredMethod> &methods) {
    jvmtiEnv *jvmti = Vm::Jvmti();
    jint count = 0;
    jmethodID *jmethods = nullptr;
    if (jvmti->GetClassMethods(klass, &count, &jmethods) != JVMTI_ERROR_NONE) return 0;
    jobject loader = nullptr;
    jvmti->GetClassLoader(klass, &loader);
    jint classModifiers = 0;
    jvmti->GetClassModifiers(klass, &classModifiers);
    JvmtiString source(jvmti);
    jvmti->GetSourceFileName(klass, &source.p);
    TId classId = 0;
    {
        std::lock_guard lock(mutex_);
        classId = DeclareClass(ClassKey(jni, loader, internal), internal, source.str(),
                               static_cast<std::uint16_t>(classModifiers))
                      .first;
        ClassRecord &cls = *classes_[classId - 1];
        for (jint i = 0; i < count; ++i) {
            JvmtiString name(jvmti), desc(jvmti);
            jint modifiers = 0;
            if (jvmti->GetMethodName(jmethods[i], &name.p, &desc.p, nullptr) != JVMTI_ERROR_NONE) continue;
            jvmti->GetMethodModifiers(jmethods[i], &modifiers);
            TId id = MethodOf(cls, name.str(), desc.str());
            if (id == 0) id = DeclareMethodFromJvmti(classId, jmethods[i], name.str(), desc.str(), modifiers);
            if (id == 0) continue;  // table full
            const MethodRecord &r = *methods_.Get(id);
            if (r.hasCode) methods.push_back({id, r.name, r.descriptor, AccessType(cls.access, r.access)});
        }
    }
    jvmti->Deallocate(reinterpret_cast<unsigned char *>(jmethods));
    Modules::Assign(jni, loader, nullptr, internal.c_str(), *Class(classId));
    if (loader) jni->DeleteLocalRef(loader);
    return classId;
}

// ---- Lookups -------------------------------------------------------------------------------

TId ClassRegistry::MethodIdOf(jmethodID jm) {
    if (jm == nullptr) return 0;
    std::lock_guard lock(mutex_);
    if (auto it = methodByJmethod_.find(jm); it != methodByJmethod_.end()) return it->second;
    // A method of a class Martini did not see load (before the agent's hook was on):
    // declared from JVMTI, without its loader (no JNI here: callers may be non-Java
    // threads).
    jvmtiEnv *jvmti = Vm::Jvmti();
    jclass klass = nullptr;
    JvmtiString name(jvmti), desc(jvmti), sig(jvmti);
    jint modifiers = 0;
    if (jvmti->GetMethodDeclaringClass(jm, &klass) != JVMTI_ERROR_NONE ||
        jvmti->GetMethodName(jm, &name.p, &desc.p, nullptr) != JVMTI_ERROR_NONE ||
        jvmti->GetClassSignature(klass, &sig.p, nullptr) != JVMTI_ERROR_NONE) {
        return 0;
    }
    jvmti->GetMethodModifiers(jm, &modifiers);
    const std::string internal = InternalFromSignature(sig.p);
    JvmtiString source(jvmti);
    jvmti->GetSourceFileName(klass, &source.p);
    jint classModifiers = 0;
    jvmti->GetClassModifiers(klass, &classModifiers);
    const TId classId =
        DeclareClass("?/" + internal, internal, source.str(), static_cast<std::uint16_t>(classModifiers)).first;
    const TId id = DeclareMethodFromJvmti(classId, jm, name.str(), desc.str(), modifiers);
    if (id == 0) return 0;
    methods_.Get(id)->jmethod.store(jm, std::memory_order_release);
    methodByJmethod_[jm] = id;
    return id;
}

namespace {

// Arrays: "[I" -> "int[]", "[Ljava/lang/String;" -> "java.lang.String[]".
std::string ArraySourceName(const std::string &internal) {
    std::string n = internal;
    int dims = 0;
    while (!n.empty() && n[0] == '[') {
        n.erase(0, 1);
        ++dims;
    }
    if (dims > 0) {
        static const std::map<char, const char *> kPrim = {{'Z', "boolean"}, {'B', "byte"}, {'C', "char"},
                                                           {'S', "short"},   {'I', "int"},  {'J', "long"},
                                                           {'F', "float"},   {'D', "double"}};
        n = n.size() == 1 && kPrim.count(n[0]) ? kPrim.at(n[0]) : InternalFromSignature(n.c_str());
        for (int i = 0; i < dims; ++i) n += "[]";
    }
    return SourceName(n);
}

}  // namespace

TId ClassRegistry::ClassIdOf(JNIEnv *jni, jclass klass) {
    std::string internal;
    jobject loader = nullptr;
    if (!NameAndLoader(klass, internal, loader)) return 0;
    std::lock_guard lock(mutex_);
    const std::string key = ClassKey(jni, loader, internal);
    if (loader) jni->DeleteLocalRef(loader);
    if (auto c = classByKey_.find(key); c != classByKey_.end()) return c->second;
    return AddNamedClass(key, internal, ArraySourceName(internal));
}

TId ClassRegistry::ArrayClassId(JNIEnv *jni, jobject loader, const std::string &descriptor,
                                const std::string &sourceName) {
    // An array class's loader is its element class's: the bootstrap loader for
    // primitive elements; assumed so for java.* elements, and the loader of the class
    // being loaded otherwise (Allocations checks it against the first array).
    const std::size_t dims = descriptor.find_first_not_of('[');
    const bool boot = dims == std::string::npos || descriptor[dims] != 'L' ||
                      descriptor.compare(dims, 6, "Ljava/") == 0;
    std::lock_guard lock(mutex_);
    const std::string key = ClassKey(jni, boot ? nullptr : loader, descriptor);
    if (auto c = classByKey_.find(key); c != classByKey_.end()) return c->second;
    return AddNamedClass(key, descriptor, sourceName);
}

ClientMask ClassRegistry::InterestOf(TId classId, EEventGroup group) {
    ClassRecord *cls = Class(classId);
    if (cls == nullptr) return 0;
    const bool heap = group == EG_HEAP;
    std::atomic<bool> &known = heap ? cls->heapKnown : cls->monitorKnown;
    std::atomic<ClientMask> &mask = heap ? cls->heapInterest : cls->monitorInterest;
    if (known.load(std::memory_order_acquire)) return mask.load(std::memory_order_relaxed);
    // Two threads may both get here for a class: the core caches the filters' answer
    // by id, so they store the same mask.
    ClientMask m;
    if (heap) {
        SHeapFilterData data{cls->name.c_str()};
        m = Vm::Core().HeapInterest(classId, data);
    } else {
        SMonitorFilterData data{cls->name.c_str()};
        m = Vm::Core().MonitorInterest(classId, data);
    }
    mask.store(m, std::memory_order_relaxed);
    known.store(true, std::memory_order_release);
    return m;
}

void ClassRegistry::ForgetInterest() {
    std::lock_guard lock(mutex_);
    for (const auto &cls : classes_) {
        cls->heapKnown.store(false, std::memory_order_relaxed);
        cls->monitorKnown.store(false, std::memory_order_relaxed);
        cls->heapInterest.store(0, std::memory_order_relaxed);
        cls->monitorInterest.store(0, std::memory_order_relaxed);
        cls->probed.store(false, std::memory_order_relaxed);
    }
}

bool ClassRegistry::IsConstructorOf(TId methodId, TId classId) {
    const MethodRecord *m = methods_.Get(methodId);
    if (m == nullptr || m->name != "<init>") return false;
    if (m->classId == classId) return true;
    // A method declared from JVMTI (its jmethodID was never bound to the record made at
    // ClassFileLoadHook) has a class record of its own: compare the names.
    std::lock_guard lock(mutex_);
    if (m->classId == 0 || m->classId > classes_.size() || classId == 0 || classId > classes_.size()) return false;
    return classes_[m->classId - 1]->internalName == classes_[classId - 1]->internalName;
}

void ClassRegistry::AppendFrames(const jvmtiFrameInfo *frames, jint count, std::vector<SStackEntry> &out) {
    for (jint i = 0; i < count; ++i) {
        const TId mid = MethodIdOf(frames[i].method);
        const MethodRecord *m = methods_.Get(mid);
        const auto loc = static_cast<std::uint32_t>(frames[i].location);
        out.push_back({mid, frames[i].location < 0 ? ~0u : loc, m ? m->RunLineAt(loc) : 0u});
    }
}

// ---- Events --------------------------------------------------------------------------------

void ClassRegistry::RaiseDeclared(TId classId) {
    const bool classLoad = Vm::Core().IsEnabled(EV_CLASS_LOAD), newMethod = Vm::Core().IsEnabled(EV_NEW_METHOD);
    if (!classLoad && !newMethod) return;
    const ClassRecord *cls = Class(classId);  // records are never removed
    if (cls == nullptr) return;
    if (classLoad) RaiseClassLoad(classId, *cls);
    if (newMethod) RaiseNewMethods(classId, *cls);
}

// What a class's methods share with it: its module and source file, when known (in
// events and in facts alike).
template <class Facts>
void GiveClassOrigin(const ClassRecord &c, Facts &f, BitSet &given) {
    if (const TId module = c.moduleId.load(std::memory_order_acquire); module != 0) {
        f.moduleId = module;
        given |= DR_MODULE_ID;
    }
    if (!c.sourceFile.empty()) {
        if constexpr (requires { f.szSourceFileName; }) {
            f.szSourceFileName = c.sourceFile.c_str();
        } else {
            f.sourceFile = c.sourceFile;
        }
        given |= DR_SOURCE_FILE_NAME;
    }
}

void ClassRegistry::RaiseClassLoad(TId classId, const ClassRecord &cls) {
    SClassLoadEventData d;
    d.classId = classId;
    d.szClassName = cls.name.c_str();
    d.validData = DR_CLASS_ID | DR_CLASS_NAME;
    GiveClassOrigin(cls, d, d.validData);
    if (Vm::Requests(EV_CLASS_LOAD, DR_THREAD_ID) && tContext != nullptr) {
        d.threadId = tContext->id;
        d.validData |= DR_THREAD_ID;
    }
    Vm::Core().Raise<IClassLoadEventObserver>(d);
}

void ClassRegistry::RaiseNewMethods(TId classId, const ClassRecord &cls) {
    std::vector<SLineNumberTableEntry> lines;
    for (TId id : cls.methods) {
        const MethodRecord *m = methods_.Get(id);
        if (m == nullptr) continue;
        SNewMethodEventData d;
        d.methodId = id;
        d.szMethodName = m->name.c_str();
        d.szMethodSig = m->descriptor.c_str();
        d.methodAccessType = AccessType(cls.access, m->access);
        d.classId = classId;
        d.szClassName = cls.name.c_str();
        d.validData = DR_METHOD_ID | DR_METHOD_NAME | DR_METHOD_SIGNATURE | DR_METHOD_ACCESS_TYPE | DR_CLASS_ID |
                      DR_CLASS_NAME;
        GiveClassOrigin(cls, d, d.validData);
        if (m->hasCode) {
            lines.clear();
            for (const auto &l : m->lines) lines.push_back({l.offset, l.line});
            d.lineNumbers.entries = lines.data();
            d.lineNumbers.uiSize = d.lineNumbers.uiActualSize = static_cast<unsigned>(lines.size());
            d.validData |= DR_METHOD_LINE_NUMBERS;
        }
        Vm::Core().Raise<INewMethodEventObserver>(d);
    }
}

// ---- Data requests -------------------------------------------------------------------------

TResult ClassRegistry::DescribeClass(TId id, core::ClassFacts &f) {
    std::lock_guard lock(mutex_);
    if (id == 0 || id > classes_.size()) return MRTE_ERROR_ILLEGAL_ID;
    const ClassRecord &c = *classes_[id - 1];
    f.name = c.name;
    f.methods = c.methods;
    f.given = DR_CLASS_NAME | DR_CLASS_METHODS;
    GiveClassOrigin(c, f, f.given);
    return MRTE_RESULT_OK;
}

TResult ClassRegistry::DescribeMethod(TId id, core::MethodFacts &f) {
    const MethodRecord *m = methods_.Get(id);
    if (m == nullptr || id > methods_.size()) return MRTE_ERROR_ILLEGAL_ID;
    std::lock_guard lock(mutex_);
    const ClassRecord &c = *classes_[m->classId - 1];
    f.name = m->name;
    f.signature = m->descriptor;
    f.className = c.name;
    f.classId = m->classId;
    f.accessType = AccessType(c.access, m->access);
    f.given = DR_METHOD_NAME | DR_METHOD_SIGNATURE | DR_CLASS_NAME | DR_CLASS_ID | DR_METHOD_ACCESS_TYPE;
    GiveClassOrigin(c, f, f.given);
    if (m->hasCode) {
        for (const auto &l : m->lines) f.lines.push_back({l.offset, l.line});
        f.given |= DR_METHOD_LINE_NUMBERS;
    }
    if (const auto address = m->codeAddress.load(std::memory_order_acquire); address != 0) {
        f.codeAddress = address;
        f.codeSize = m->codeSize.load(std::memory_order_relaxed);
        f.given |= DR_METHOD_CODE;
    }
    return MRTE_RESULT_OK;
}

}  // namespace martini::jvm
