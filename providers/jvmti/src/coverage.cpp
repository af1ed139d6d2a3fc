#include "coverage.h"

#include "jvm_support.h"
#include "martini/core/log.h"

#include <algorithm>
#include <limits>

namespace martini::jvm {

void Coverage::Decide() { wanted_ = Vm::Core().CoverageRequested() != 0; }

bool Coverage::Never(const std::string &internalName) {
    return internalName == "java/lang/Object" || internalName == "java/lang/Thread" ||
           internalName.rfind("martini/runtime/", 0) == 0;
}

bool Coverage::Start(JNIEnv *jni, jclass probes) {
    if (!wanted_ || totals_ != nullptr) return wanted_;
    jmethodID totals = jni->GetStaticMethodID(probes, "totals", "(II)[J");
    jmethodID counters = totals ? jni->GetStaticMethodID(probes, "counters", "(II)[J") : nullptr;
    jmethodID count = counters ? jni->GetStaticMethodID(probes, "count", "(I)V") : nullptr;
    probes_ = count ? static_cast<jclass>(jni->NewGlobalRef(probes)) : nullptr;
    if (probes_ == nullptr) {
        if (jni->ExceptionCheck()) jni->ExceptionClear();
        core::LogLine("coverage: martini-probes.jar has no Probes.counters, count and totals (a jar of another "
                      "version?): no coverage counts");
        wanted_ = false;
        return false;
    }
    totals_ = totals;
    return true;
}

CoverageSelector Coverage::Selector(ClassLoad &load) {
    if (!wanted_) return {};
    return [&load](const ClassDecl &decl, const MethodDecl &m, CoverageLayout &layout) -> std::int64_t {
        if (totals_ == nullptr || Never(decl.internalName)) return kNoProbe;
        const TId id = load.ProbeableMethod(decl, m);
        if (id == 0) return kNoProbe;
        const std::string className = SourceName(decl.internalName);
        SCoverageFilterData data{className.c_str(), m.name.c_str(), m.descriptor.c_str(), decl.sourceFile.c_str()};
        const ClientMask clients = Vm::Core().CoverageInterest(id, data);
        if (clients == 0) return kNoProbe;
        // Clients that want only calls (callcount=counters): one add per call.
        if ((Vm::Core().CoverageItemsOf(clients) & DR_COVERAGE_BLOCKS) == 0) layout = CoverageLayout::CallsOnly();
        std::lock_guard lock(mutex_);
        const auto it = reserved_.find(id);
        if (it != reserved_.end() && it->second.layout == layout) return it->second.index;  // the same code again
        if (next_ > static_cast<std::uint32_t>(std::numeric_limits<std::int32_t>::max())) return kNoProbe;
        Counted &c = reserved_[id];
        c.index = next_++;
        c.layout = layout;
        c.lines = m.lines;
        return c.index;
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

bool Coverage::Totals(const Counted &c, std::vector<std::uint64_t> &totals) noexcept {
    // Any thread may ask (a client's own): one the JVM does not know joins it, as a daemon.
    JNIEnv *jni = Vm::Jni();
    if (jni == nullptr) {
        JavaVMAttachArgs args{JNI_VERSION_1_8, const_cast<char *>("Martini coverage"), nullptr};
        if (Vm::Java()->AttachCurrentThreadAsDaemon(reinterpret_cast<void **>(&jni), &args) != JNI_OK) return false;
    }
    const auto size = static_cast<jint>(c.layout.Counters());
    auto *sums = static_cast<jlongArray>(
        jni->CallStaticObjectMethod(probes_, totals_, static_cast<jint>(c.index), size));
    if (jni->ExceptionCheck() || sums == nullptr) {
        jni->ExceptionClear();
        return false;
    }
    totals.resize(static_cast<std::size_t>(size));
    jni->GetLongArrayRegion(sums, 0, size, reinterpret_cast<jlong *>(totals.data()));
    jni->DeleteLocalRef(sums);
    return true;
}

TResult Coverage::Describe(TId method, core::CoverageFacts &f) noexcept {
    try {
        Counted c;
        {
            std::lock_guard lock(mutex_);
            const auto it = reserved_.find(method);
            if (it == reserved_.end() || !counted_.contains(method)) return MRTE_ERROR_ILLEGAL_ID;
            c = it->second;
        }
        std::vector<std::uint64_t> total;
        if (!Totals(c, total)) return MRTE_ERROR_FAIL;
        const std::size_t n = c.layout.blocks.size();
        f.given = c.layout.callsOnly() ? DR_COVERAGE_CALLS : DR_COVERAGE_BLOCKS | DR_COVERAGE_BRANCHES | DR_COVERAGE_CALLS;
        for (std::size_t i = 0; i < n; ++i) {
            const std::uint32_t off = c.layout.blocks[i];
            f.entries.push_back({CEK_BLOCK, off, LineAt(c.lines, off), 0, total[i], 0});
        }
        using Layout = CoverageLayout;
        const auto at = [&](std::int32_t k) { return total[static_cast<std::size_t>(k)]; };
        // An outcome counted as what ran before the branch minus the outcomes had from blocks.
        const auto rest = [&](std::int32_t ran, std::uint64_t known) { return at(ran) - std::min(at(ran), known); };
        for (const Layout::Branch &b : c.layout.branches) {
            const std::uint64_t fell = at(b.fell != Layout::kNone ? b.fell : b.fellBlock);
            const std::uint64_t taken = b.takenBlock != Layout::kNone ? at(b.takenBlock) : rest(b.ran, fell);
            const unsigned line = LineAt(c.lines, b.offset);
            f.entries.push_back({CEK_BRANCH, b.offset, line, 0, fell, 0});
            f.entries.push_back({CEK_BRANCH, b.offset, line, 1, taken, 0});
        }
        for (const Layout::Switch &sw : c.layout.switches) {
            std::vector<std::uint64_t> outcomes;
            std::uint64_t known = 0;
            for (const std::int32_t block : sw.targetBlocks) {
                outcomes.push_back(block != Layout::kNone ? at(block) : 0);
                known += outcomes.back();
            }
            const unsigned line = LineAt(c.lines, sw.offset);
            for (std::size_t k = 0; k < outcomes.size(); ++k) {
                if (sw.targetBlocks[k] == Layout::kNone) outcomes[k] = rest(sw.ran, known);
                f.entries.push_back({CEK_BRANCH, sw.offset, line, static_cast<std::uint32_t>(k), outcomes[k], 0});
            }
        }
        const std::uint64_t calls = at(c.layout.entry != Layout::kNone ? c.layout.entry : 0);
        f.entries.push_back({CEK_ENTRY, 0, LineAt(c.lines, 0), 0, calls, 0});
        return MRTE_RESULT_OK;
    } catch (...) {
        return MRTE_ERROR_OUT_OF_MEMORY;
    }
}

}  // namespace martini::jvm
