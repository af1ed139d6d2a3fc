#include "metadata.h"

#include "threads.h"

#include <algorithm>

namespace martini::mono {

namespace {

EMethodAccessType AccessOf(MonoMethod *m, MonoClass *k) {
    const std::uint32_t flags = mono_method_get_flags(m, nullptr) & MONO_METHOD_ATTR_ACCESS_MASK;
    if (flags == MONO_METHOD_ATTR_PRIVATE) return MAT_CLASS_INTERNAL;
    if (flags == MONO_METHOD_ATTR_PUBLIC || flags == MONO_METHOD_ATTR_FAMILY || flags == MONO_METHOD_ATTR_FAM_OR_ASSEM) {
        // Visible outside the assembly when its class is too.
        const std::uint32_t vis = k != nullptr ? mono_class_get_flags(k) & MONO_TYPE_ATTR_VISIBILITY_MASK : 0;
        const bool classPublic = vis == MONO_TYPE_ATTR_PUBLIC || vis == MONO_TYPE_ATTR_NESTED_PUBLIC ||
                                 vis == MONO_TYPE_ATTR_NESTED_FAMILY || vis == MONO_TYPE_ATTR_NESTED_FAM_OR_ASSEM;
        return classPublic ? MAT_PACKAGE_API : MAT_PACKAGE_INTERNAL;
    }
    return MAT_PACKAGE_INTERNAL;  // internal, protected internal-only, compiler-controlled
}

// "(int,int)int": parameters as Mono describes them, then the return type.
std::string SignatureOf(MonoMethod *m) {
    MonoMethodSignature *sig = mono_method_signature(m);
    if (sig == nullptr) return "()";
    // Appended, not "(" + str: g++ 12 -O3 warns falsely (-Wrestrict) on that form.
    std::string s = "(";
    s += MonoString(mono_signature_get_desc(sig, true)).str();
    s += ')';
    if (MonoType *ret = mono_signature_get_return_type(sig)) s += MonoString(mono_type_full_name(ret)).str();
    return s;
}

}  // namespace

void Metadata::SetCallbacks(MonoProfilerHandle h) {
    // Always: module and class ids are the provider's own need.
    mono_profiler_set_image_loaded_callback(h, OnImageLoaded);
    mono_profiler_set_class_loaded_callback(h, OnClassLoaded);
}

std::string Metadata::ClassName(MonoClass *k) {
    // Reflection's Type.FullName form: namespace, outer classes joined with '+', the
    // metadata name with its generic arity (List`1); arrays as "System.Int32[]".
    if (k == nullptr) return "";
    std::string name = mono_class_get_name(k);
    MonoClass *outer = k;
    while (MonoClass *n = mono_class_get_nesting_type(outer)) {
        name = std::string(mono_class_get_name(n)) + "+" + name;
        outer = n;
    }
    const char *ns = mono_class_get_namespace(outer);
    if (ns != nullptr && *ns != '\0') name = std::string(ns) + "." + name;
    return name;
}

const MethodInfo *Metadata::Known(MonoMethod *m) {
    std::lock_guard lock(mutex_);
    const auto it = methods_.find(IdOf(m));
    return it != methods_.end() ? it->second.get() : nullptr;
}

const MethodInfo *Metadata::Method(MonoMethod *m) {
    const TId id = IdOf(m);
    {
        std::lock_guard lock(mutex_);
        const auto it = methods_.find(id);
        if (it != methods_.end()) return it->second.get();
    }
    auto info = std::make_unique<MethodInfo>();
    info->id = id;
    info->method = m;
    info->name = mono_method_get_name(m);
    MonoClass *k = mono_method_get_class(m);
    info->className = ClassName(k);
    info->signature = SignatureOf(m);
    info->access = AccessOf(m, k);
    if (mono_method_get_token(m) == 0) {
        const std::string full = MonoString(mono_method_full_name(m, false)).str();
        info->wrapper = full.rfind("(wrapper ", 0) == 0 && full.rfind("(wrapper managed-to-native)", 0) != 0;
    }
    std::uint32_t iflags = 0;
    const std::uint32_t flags = mono_method_get_flags(m, &iflags);
    info->native = (iflags & MONO_METHOD_IMPL_ATTR_INTERNAL_CALL) != 0 || (flags & MONO_METHOD_ATTR_PINVOKE_IMPL) != 0;
    const TId classId = k != nullptr ? Class(k) : 0;
    info->classId = classId;
    info->moduleId = k != nullptr ? IdOf(mono_class_get_image(k)) : 0;
    const MethodInfo *result;
    {
        std::lock_guard lock(mutex_);
        auto [it, inserted] = methods_.emplace(id, std::move(info));
        result = it->second.get();
        if (!inserted) return result;
    }
    if (Vm::Wants(EV_NEW_METHOD)) RaiseNewMethod(id);
    return result;
}

void Metadata::RaiseNewMethod(TId id) {
    Vm::RaiseOrQueue([id] {
        const MethodInfo *m;
        {
            std::lock_guard lock(mutex_);
            m = methods_.at(id).get();
        }
        const BitSet wanted = Vm::Core().RequestedData(EV_NEW_METHOD);
        SNewMethodEventData d;
        d.methodId = id;
        d.validData = DR_METHOD_ID;
        core::Put(d, wanted, DR_METHOD_NAME, d.szMethodName, m->name.c_str());
        core::Put(d, wanted, DR_METHOD_SIGNATURE, d.szMethodSig, m->signature.c_str());
        core::Put(d, wanted, DR_METHOD_ACCESS_TYPE, d.methodAccessType, m->access);
        core::Put(d, wanted, DR_CLASS_ID, d.classId, m->classId);
        core::Put(d, wanted, DR_CLASS_NAME, d.szClassName, m->className.c_str());
        core::Put(d, wanted, DR_MODULE_ID, d.moduleId, m->moduleId);
        std::vector<SLineNumberTableEntry> lines;
        std::string source;
        if (wanted & (DR_METHOD_LINE_NUMBERS | DR_SOURCE_FILE_NAME)) Lines(*m, lines, source);
        if ((wanted & DR_SOURCE_FILE_NAME) && !source.empty()) {
            d.szSourceFileName = source.c_str();
            d.validData |= DR_SOURCE_FILE_NAME;
        }
        if (wanted & DR_METHOD_LINE_NUMBERS) {
            d.lineNumbers.entries = lines.data();
            d.lineNumbers.uiSize = d.lineNumbers.uiActualSize = static_cast<unsigned>(lines.size());
            d.validData |= DR_METHOD_LINE_NUMBERS;
        }
        Vm::Core().Raise<INewMethodEventObserver>(d);
    });
}

TId Metadata::Class(MonoClass *k) {
    const TId id = IdOf(k);
    {
        std::lock_guard lock(mutex_);
        if (classes_.count(id) != 0) return id;
    }
    ClassRecord r;
    r.id = id;
    r.klass = k;
    r.name = ClassName(k);
    r.moduleId = IdOf(mono_class_get_image(k));
    std::lock_guard lock(mutex_);
    classes_.emplace(id, std::move(r));
    return id;
}

void Metadata::OnImageLoaded(MonoProfiler *, MonoImage *image) {
    const TId id = IdOf(image);
    const char *n = mono_image_get_name(image);
    {
        std::lock_guard lock(mutex_);
        modules_[id] = ModuleRecord{id, n != nullptr ? n : ""};
    }
    if (!Vm::Wants(EV_MODULE_LOAD)) return;
    Vm::RaiseOrQueue([id] {
        std::string name;
        {
            std::lock_guard lock(mutex_);
            name = modules_.at(id).name;
        }
        SModuleLoadEventData d;
        d.moduleId = id;
        d.validData = DR_MODULE_ID;
        core::Put(d, Vm::Core().RequestedData(EV_MODULE_LOAD), DR_MODULE_NAME, d.szModuleName, name.c_str());
        Vm::Core().Raise<IModuleLoadEventObserver>(d);
    });
}

void Metadata::OnClassLoaded(MonoProfiler *, MonoClass *klass) {
    const TId id = Class(klass);
    if (!Vm::Wants(EV_CLASS_LOAD)) return;
    const TId thread = Threads::IdOfCurrent();
    Vm::RaiseOrQueue([id, thread] {
        const BitSet wanted = Vm::Core().RequestedData(EV_CLASS_LOAD);
        core::ClassFacts f;
        DescribeClass(id, wanted & DR_SOURCE_FILE_NAME, f);
        SClassLoadEventData d;
        d.classId = id;
        d.validData = DR_CLASS_ID;
        core::Put(d, wanted, DR_CLASS_NAME, d.szClassName, f.name.c_str());
        core::Put(d, wanted, DR_MODULE_ID, d.moduleId, f.moduleId);
        if (thread != 0) core::Put(d, wanted, DR_THREAD_ID, d.threadId, thread);
        if ((f.given & DR_SOURCE_FILE_NAME) && (wanted & DR_SOURCE_FILE_NAME)) {
            d.szSourceFileName = f.sourceFile.c_str();
            d.validData |= DR_SOURCE_FILE_NAME;
        }
        Vm::Core().Raise<IClassLoadEventObserver>(d);
    });
}

Metadata::ClassRecord *Metadata::FindClass(TId id) {
    const auto it = classes_.find(id);
    return it != classes_.end() ? &it->second : nullptr;
}

void Metadata::Lines(const MethodInfo &m, std::vector<SLineNumberTableEntry> &lines, std::string &sourceFile,
                     bool runtimeThread) {
    {
        std::lock_guard lock(mutex_);
        const auto it = lines_.find(m.id);
        if (it != lines_.end() && it->second.known) {
            lines = it->second.lines;
            sourceFile = it->second.sourceFile;
            return;
        }
    }
    // Mono's debug info and method headers are read through its API, which aborts on a
    // thread it does not know: from such a thread (a client's own), only what is cached.
    if (tContext == nullptr && !runtimeThread) return;
    LineCache c;
    c.known = true;
    // Mono's debug info: a line per sequence point (IL offset). Only with symbols
    // (mcs -debug: .mdb; portable .pdb) and with debugging on (--debug, or this module
    // turned it on at init); mono_debug_lookup_method answers null otherwise.
    if (mono_debug_enabled() && !m.wrapper && !m.native) {
        if (MonoDebugMethodInfo *minfo = mono_debug_lookup_method(m.method)) {
            std::uint32_t codeSize = 0;
            if (MonoMethodHeader *header = mono_method_get_header(m.method)) {
                std::uint32_t maxStack = 0;
                mono_method_header_get_code(header, &codeSize, &maxStack);
                mono_metadata_free_mh(header);
            }
            unsigned lastLine = 0;
            for (std::uint32_t il = 0; il < codeSize; ++il) {
                MonoDebugSourceLocation *loc = mono_debug_method_lookup_location(minfo, static_cast<int>(il));
                if (loc == nullptr) continue;
                if (c.sourceFile.empty() && loc->source_file != nullptr) c.sourceFile = loc->source_file;
                // The location is the sequence point at or before il: one entry per change.
                if (loc->il_offset == il && loc->row != lastLine) {
                    c.lines.push_back({il, loc->row});
                    lastLine = loc->row;
                }
                mono_debug_free_source_location(loc);
            }
        }
    }
    lines = c.lines;
    sourceFile = c.sourceFile;
    std::lock_guard lock(mutex_);
    lines_[m.id] = std::move(c);
}

unsigned Metadata::LineAt(MonoMethod *m, unsigned ilOffset) {
    const MethodInfo *info = Method(m);
    std::vector<SLineNumberTableEntry> lines;
    std::string source;
    Lines(*info, lines, source);
    unsigned line = 0;
    for (const auto &e : lines) {
        if (e.uiOffset > ilOffset) break;
        line = e.uiLineNumber;
    }
    return line;
}

TResult Metadata::DescribeModule(TId id, core::ModuleFacts &f) {
    std::lock_guard lock(mutex_);
    const auto it = modules_.find(id);
    if (it == modules_.end()) return MRTE_ERROR_ILLEGAL_ID;
    f.name = it->second.name;
    f.given |= DR_MODULE_NAME;
    return MRTE_RESULT_OK;
}

TResult Metadata::DescribeClass(TId id, BitSet requested, core::ClassFacts &f) {
    MonoClass *k = nullptr;
    {
        std::lock_guard lock(mutex_);
        ClassRecord *r = FindClass(id);
        if (r == nullptr) return MRTE_ERROR_ILLEGAL_ID;
        f.name = r->name;
        f.moduleId = r->moduleId;
        f.given |= DR_CLASS_NAME | DR_MODULE_ID;
        if (r->sourceKnown) {
            if (!r->sourceFile.empty()) {
                f.sourceFile = r->sourceFile;
                f.given |= DR_SOURCE_FILE_NAME;
            }
            requested &= ~DR_SOURCE_FILE_NAME;
        }
        k = r->klass;
    }
    if ((requested & (DR_SOURCE_FILE_NAME | DR_CLASS_METHODS)) && tContext != nullptr) {
        // The class's methods (from Mono's metadata: not on a thread Mono does not know) (as known to Mono's metadata); its source file is that of
        // the first method with debug info.
        std::string source;
        void *iter = nullptr;
        while (MonoMethod *m = mono_class_get_methods(k, &iter)) {
            const MethodInfo *info = Method(m);
            if (requested & DR_CLASS_METHODS) f.methods.push_back(info->id);
            if ((requested & DR_SOURCE_FILE_NAME) && source.empty()) {
                std::vector<SLineNumberTableEntry> lines;
                Lines(*info, lines, source);
            }
        }
        if (requested & DR_CLASS_METHODS) f.given |= DR_CLASS_METHODS;
        if (requested & DR_SOURCE_FILE_NAME) {
            std::lock_guard lock(mutex_);
            if (ClassRecord *r = FindClass(id)) {
                r->sourceKnown = true;
                r->sourceFile = source;
            }
            if (!source.empty()) {
                f.sourceFile = source;
                f.given |= DR_SOURCE_FILE_NAME;
            }
        }
    }
    return MRTE_RESULT_OK;
}

TResult Metadata::DescribeMethod(TId id, BitSet requested, core::MethodFacts &f) {
    const MethodInfo *m;
    {
        std::lock_guard lock(mutex_);
        const auto it = methods_.find(id);
        if (it == methods_.end()) return MRTE_ERROR_ILLEGAL_ID;
        m = it->second.get();
    }
    f.name = m->name;
    f.signature = m->signature;
    f.className = m->className;
    f.classId = m->classId;
    f.moduleId = m->moduleId;
    f.accessType = m->access;
    f.given |= DR_METHOD_NAME | DR_METHOD_SIGNATURE | DR_CLASS_NAME | DR_CLASS_ID | DR_MODULE_ID | DR_METHOD_ACCESS_TYPE;
    if (requested & (DR_METHOD_LINE_NUMBERS | DR_SOURCE_FILE_NAME)) {
        Lines(*m, f.lines, f.sourceFile);
        if (!f.lines.empty()) f.given |= DR_METHOD_LINE_NUMBERS;
        if (!f.sourceFile.empty()) f.given |= DR_SOURCE_FILE_NAME;
    }
    return MRTE_RESULT_OK;
}

}  // namespace martini::mono
