#include "coverage.h"

#include "jvm_support.h"
#include "martini/core/log.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

namespace martini::jvm {

void Coverage::Decide() {
    wanted_ = Vm::Core().CoverageRequested() != 0;
    const char *mode = std::getenv("MARTINI_COVERAGE_COUNTERS");
    counterProbe_ = mode == nullptr                   ? Probe::kHit
                    : std::strcmp(mode, "plain") == 0 ? Probe::kHitPlain
                    : std::strcmp(mode, "none") == 0  ? Probe::kHitNone
                                                      : Probe::kHit;
}

bool Coverage::Never(const std::string &internalName) {
    return internalName == "java/lang/Object" || internalName == "java/lang/Thread" ||
           internalName == "jdk/internal/misc/Unsafe" ||
           internalName.rfind("martini/runtime/", 0) == 0;
}

bool Coverage::Start(JNIEnv *jni, jclass probes) {
    if (!wanted_ || counters_ != nullptr) return wanted_;
    const auto fail = [&](const std::string &why) {
        if (jni->ExceptionCheck()) jni->ExceptionClear();
        core::LogLine("coverage: " + why + ": no coverage counts");
        wanted_ = false;
        return false;
    };
    // Probes' layout must be this agent's (a jar of another version is refused).
    jfieldID stripes = jni->GetStaticFieldID(probes, "STRIPES", "I");
    jfieldID stride = stripes ? jni->GetStaticFieldID(probes, "STRIDE", "J") : nullptr;
    if (stride == nullptr || jni->GetStaticIntField(probes, stripes) != static_cast<jint>(kStripes) ||
        jni->GetStaticLongField(probes, stride) != static_cast<jlong>(kMaxCounters * sizeof(std::uint64_t))) {
        return fail("martini-probes.jar lays the counters out otherwise (a jar of another version?)");
    }
    void *memory = mmap(nullptr, kMappedBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                        -1, 0);
    if (memory == MAP_FAILED) return fail(std::string("cannot map the counters: ") + std::strerror(errno));
    // JNI reads and writes fields whatever their access: Probes gets the Unsafe
    // instance and the counters' address without reflection in Java. Its calls to
    // jdk.internal.misc.Unsafe need the package exported to its module (the bootstrap
    // class path's unnamed one).
    jclass unsafeClass = jni->FindClass("jdk/internal/misc/Unsafe");
    jfieldID theUnsafe =
        unsafeClass ? jni->GetStaticFieldID(unsafeClass, "theUnsafe", "Ljdk/internal/misc/Unsafe;") : nullptr;
    jobject unsafe = theUnsafe ? jni->GetStaticObjectField(unsafeClass, theUnsafe) : nullptr;
    jfieldID unsafeField = jni->GetStaticFieldID(probes, "unsafe", "Ljdk/internal/misc/Unsafe;");
    jfieldID countersField = unsafeField ? jni->GetStaticFieldID(probes, "counters", "J") : nullptr;
    jobject javaBase = unsafeClass ? jni->GetModule(unsafeClass) : nullptr;
    jobject probesModule = jni->GetModule(probes);
    if (unsafe == nullptr || countersField == nullptr || javaBase == nullptr || probesModule == nullptr ||
        Vm::Jvmti()->AddModuleExports(javaBase, "jdk.internal.misc", probesModule) != JVMTI_ERROR_NONE) {
        munmap(memory, kMappedBytes);
        return fail("cannot reach jdk.internal.misc.Unsafe or Probes' coverage fields (martini-probes.jar of another "
                    "version?)");
    }
    jni->SetStaticObjectField(probes, unsafeField, unsafe);
    jni->SetStaticLongField(probes, countersField, static_cast<jlong>(reinterpret_cast<std::uintptr_t>(memory)));
    counters_ = static_cast<std::uint64_t *>(memory);
    return true;
}

CoverageSelector Coverage::Selector(ClassLoad &load) {
    if (!wanted_) return {};
    return [&load](const ClassDecl &decl, const MethodDecl &m, const CoverageLayout &layout) -> std::int64_t {
        if (counters_ == nullptr || Never(decl.internalName)) return kNoProbe;
        const TId id = load.ProbeableMethod(decl, m);
        if (id == 0) return kNoProbe;
        const std::string className = SourceName(decl.internalName);
        SCoverageFilterData data{className.c_str(), m.name.c_str(), m.descriptor.c_str(), decl.sourceFile.c_str()};
        if (Vm::Core().CoverageInterest(id, data) == 0) return kNoProbe;
        std::lock_guard lock(mutex_);
        const auto it = reserved_.find(id);
        if (it != reserved_.end() && it->second.layout == layout) return it->second.first;  // the same code again
        if (next_ + layout.Counters() > kMaxCounters) {
            if (!fullSaid_) {
                fullSaid_ = true;
                core::LogF("coverage: all %llu counters are in use: methods loaded from now on are not covered",
                           static_cast<unsigned long long>(kMaxCounters));
            }
            return kNoProbe;
        }
        Counted &c = reserved_[id];
        c.first = static_cast<std::uint32_t>(next_);
        c.layout = layout;
        c.lines = m.lines;
        next_ += layout.Counters();
        return c.first;
    };
}

void Coverage::Record(const ClassLoad &load, const InstrumentResult &result) {
    if (!wanted_ || result.coverage.empty()) return;
    std::lock_guard lock(mutex_);
    for (const auto &c : result.coverage) {
        if (c.method < load.ids.size() && load.ids[c.method] != 0) counted_.insert(load.ids[c.method]);
    }
}

bool Coverage::AskAbout(jclass klass, const std::string &internalName, const std::vector<DeclaredMethod> &methods) {
    if (!wanted_ || Never(internalName)) return false;
    JvmtiString source(Vm::Jvmti());
    if (Vm::Jvmti()->GetSourceFileName(klass, &source.p) != JVMTI_ERROR_NONE) source.p = nullptr;
    const std::string className = SourceName(internalName);
    bool wanted = false;
    for (const DeclaredMethod &m : methods) {
        SCoverageFilterData data{className.c_str(), m.name.c_str(), m.descriptor.c_str(), source.p ? source.p : ""};
        wanted = Vm::Core().CoverageInterest(m.id, data) != 0 || wanted;
    }
    return wanted;
}

namespace {

std::uint64_t Load(std::uint64_t &counter) {
    return std::atomic_ref<std::uint64_t>(counter).load(std::memory_order_relaxed);
}

}  // namespace

std::uint64_t Coverage::Total(std::uint64_t counter) noexcept {
    std::uint64_t total = 0;
    for (std::uint64_t s = 0; s <= kStripes; ++s) total += Load(counters_[s * kMaxCounters + counter]);
    return total;
}

TResult Coverage::Describe(TId method, core::CoverageFacts &f) noexcept {
    try {
        std::lock_guard lock(mutex_);
        const auto it = reserved_.find(method);
        if (it == reserved_.end() || !counted_.contains(method)) return MRTE_ERROR_ILLEGAL_ID;
        const Counted &c = it->second;
        const std::size_t n = c.layout.blocks.size();
        f.given = DR_COVERAGE_BLOCKS | DR_COVERAGE_BRANCHES;
        for (std::size_t i = 0; i < n; ++i) {
            const std::uint32_t off = c.layout.blocks[i];
            f.entries.push_back({CEK_BLOCK, off, LineAt(c.lines, off), 0, Total(c.first + i), 0});
        }
        for (std::size_t j = 0; j < c.layout.branches.size(); ++j) {
            const std::uint32_t off = c.layout.branches[j];
            const std::uint64_t ran = Total(c.first + n + 2 * j);
            const std::uint64_t fell = Total(c.first + n + 2 * j + 1);
            const unsigned line = LineAt(c.lines, off);
            f.entries.push_back({CEK_BRANCH, off, line, 0, fell, 0});
            f.entries.push_back({CEK_BRANCH, off, line, 1, ran - std::min(ran, fell), 0});
        }
        const std::uint64_t calls = Total(c.first + c.layout.Counters() - 1);
        f.entries.push_back({CEK_ENTRY, 0, LineAt(c.lines, 0), 0, calls, 0});
        return MRTE_RESULT_OK;
    } catch (...) {
        return MRTE_ERROR_OUT_OF_MEMORY;
    }
}

}  // namespace martini::jvm
