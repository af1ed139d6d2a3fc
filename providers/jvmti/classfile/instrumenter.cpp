// Class-file instrumentation: asks the selectors what to probe, has one planner per
// probe kind (planners.h) turn that into insertions, lays each method out once
// (layout.h) and writes the class. JVMS chapter 4 (format and verification) and
// chapter 6 (instructions) are the reference.
#include "instrumenter.h"

#include "bytecode.h"
#include "class_file.h"
#include "layout.h"
#include "planners.h"
#include "probes.h"

#include <algorithm>
#include <initializer_list>
#include <limits>
#include <optional>

namespace martini::jvm {

namespace {

using namespace detail;

// Probe ids are pushed as Java ints: a selector's answer must be 0 .. 2^31-1.
constexpr bool ProbeIdFits(std::int64_t id) { return id >= 0 && id <= std::numeric_limits<std::int32_t>::max(); }

// Class files from version 49 may ldc a class constant (JVMS 4.4.1, ldc).
constexpr std::uint16_t kLdcClassVersion = 49;

// What the selectors chose for one method.
struct Chosen {
    std::optional<std::int32_t> call;   // enter/leave probe id
    std::optional<std::int32_t> alloc;  // class probe id, after the super() call at superCallAt
    std::uint32_t superCallAt = 0;
    std::optional<std::uint32_t> track;  // a this(...) call whose new offset is wanted
    std::vector<SiteChoice> sites;       // in code order
    std::vector<ArrayChoice> arrays;     // in code order
    std::optional<std::uint32_t> coverage;  // first counter
    CoverageLayout layout;                  // with `coverage`

    bool empty() const { return !call && !alloc && sites.empty() && arrays.empty() && !coverage; }
};

// One class being instrumented.
struct ClassJob {
    const ParsedClass &pc;
    const Selectors &selectors;
    InstrumentResult &result;
    std::int64_t allocId = kNoProbe;
};

// ---- Asking the selectors ---------------------------------------------------------------

// Allocation probes go only into classes that can have instances of their own and have
// a constructor (java/lang/Object has no super() to put the probe after).
std::int64_t ChooseAllocClass(const ParsedClass &pc, const AllocSelector &alloc, InstrumentResult &result) {
    const bool instantiable =
        (pc.decl.accessFlags & (kAccInterface | kAccAbstract)) == 0 && !pc.decl.superName.empty();
    const bool hasConstructor = std::any_of(pc.decl.methods.begin(), pc.decl.methods.end(),
                                            [](const MethodDecl &d) { return d.hasCode && d.name == "<init>"; });
    if (!alloc || !instantiable || !hasConstructor) return kNoProbe;
    std::int64_t id = alloc(pc.decl);
    if (id != kNoProbe && !ProbeIdFits(id)) {
        result.allocSkipped.push_back(pc.decl.internalName + ": class probe id out of range");
        id = kNoProbe;
    }
    if (id != kNoProbe) result.delegationOffsets.assign(pc.methods.size(), -1);
    return id;
}

void ChooseCall(const ClassJob &job, const MethodDecl &d, Chosen &chosen) {
    if (!job.selectors.calls) return;
    const std::int64_t id = job.selectors.calls(job.pc.decl, d);
    if (id != kNoProbe && !ProbeIdFits(id)) {
        job.result.skipped.push_back(d.name + d.descriptor + ": probe id out of range");
    } else if (id != kNoProbe) {
        chosen.call = static_cast<std::int32_t>(id);
    }
}

void ChooseAlloc(const ClassJob &job, std::size_t i, Chosen &chosen) {
    const MethodDecl &d = job.pc.decl.methods[i];
    if (job.allocId == kNoProbe || d.name != "<init>") return;
    try {
        const CtorShape shape = AnalyzeConstructor(job.pc, job.pc.methods[i]);
        if (shape.delegates) {
            job.result.delegationOffsets[i] = shape.initAt;  // moves if the method is rewritten
            chosen.track = shape.initAt;
        } else {
            chosen.alloc = static_cast<std::int32_t>(job.allocId);
            chosen.superCallAt = shape.initAt;
        }
    } catch (const SkipMethod &e) {
        job.result.allocSkipped.push_back(d.name + d.descriptor + ": " + e.what());
    }
}

// Asks `select` about each site; an id out of range skips the site and is reported in `skipped`.
template <typename Site, typename Selector, typename Add>
void ChooseEach(const ClassJob &job, const MethodDecl &d, const std::vector<Site> &sites, const Selector &select,
                std::vector<std::string> &skipped, const char *what, Add add) {
    for (const Site &site : sites) {
        const std::int64_t id = select(job.pc.decl, d, site);
        if (id == kNoProbe) continue;
        if (!ProbeIdFits(id)) {
            skipped.push_back(d.name + d.descriptor + ": " + what + " id out of range");
            continue;
        }
        add(site, static_cast<std::int32_t>(id));
    }
}

void ChooseCoverage(const ClassJob &job, const MethodDecl &d, const Code &code, Chosen &chosen) {
    CoverageLayout layout = FindCoverageLayout(code, d.lines);
    const std::int64_t first = job.selectors.coverage(job.pc.decl, d, layout);
    if (first == kNoProbe) return;
    if (!ProbeIdFits(first) || !ProbeIdFits(static_cast<std::int64_t>(layout.Counters()))) {
        job.result.coverageSkipped.push_back(d.name + d.descriptor + ": coverage index out of range");
        return;
    }
    chosen.coverage = static_cast<std::uint32_t>(first);
    chosen.layout = std::move(layout);
}

Chosen Choose(const ClassJob &job, std::size_t i) {
    const MethodDecl &d = job.pc.decl.methods[i];
    const Selectors &s = job.selectors;
    Chosen chosen;
    ChooseCall(job, d, chosen);
    ChooseAlloc(job, i, chosen);
    if (!s.sites && !s.arrays && !s.coverage) return chosen;
    // Site, array and coverage probes look at the original code (read once for all).
    const Method &m = job.pc.methods[i];
    const Code code = ReadCode(job.pc, m.attrs[static_cast<std::size_t>(m.code)]);
    if (s.coverage) ChooseCoverage(job, d, code, chosen);
    if (s.sites) {
        ChooseEach(job, d, FindCallSites(job.pc, code), s.sites, job.result.sitesSkipped, "site probe",
                   [&](const CallSite &site, std::int32_t id) { chosen.sites.push_back(SiteChoiceFor(site, id)); });
    }
    if (s.arrays) {
        ChooseEach(job, d, FindArraySites(job.pc, code), s.arrays, job.result.arraysSkipped, "array site",
                   [&](const ArraySite &site, std::int32_t id) { chosen.arrays.push_back({site.offset, id}); });
    }
    return chosen;
}

// ---- Rewriting a method -----------------------------------------------------------------

void AddRefs(PoolAppender &pool, ProbeRefs &refs, std::initializer_list<Probe> probes) {
    for (const Probe p : probes) {
        std::uint16_t &ref = refs.method[ProbeIndex(p)];
        const ProbeMethod &pm = ProbeOf(p);
        if (ref != 0) continue;
        ref = pool.Methodref(std::string(kProbesClass), std::string(pm.name), std::string(pm.descriptor));
    }
}

// The pool entries a method's probes need, added the first time a method needs them.
void AddRefsFor(const ParsedClass &pc, const Chosen &chosen, PoolAppender &pool, ProbeRefs &refs) {
    if (chosen.call) {
        AddRefs(pool, refs, {Probe::kEnter, Probe::kLeave, Probe::kLeaveExceptional});
        refs.throwable = pool.Class("java/lang/Throwable");
        refs.stackOverflow = pool.Class("java/lang/StackOverflowError");
        refs.lostEnters = pool.Fieldref(std::string(kProbesClass), std::string(kLostEntersField),
                                        std::string(kLostEntersDescriptor));
    }
    if (chosen.alloc && pc.major >= kLdcClassVersion) {
        AddRefs(pool, refs, {Probe::kAlloc});
        refs.thisClass = pc.thisClass;
    } else if (chosen.alloc) {
        AddRefs(pool, refs, {Probe::kAllocByClassId});
    }
    if (!chosen.sites.empty()) AddRefs(pool, refs, {Probe::kInteraction, Probe::kInteractionStatic});
    if (!chosen.arrays.empty()) AddRefs(pool, refs, {Probe::kAllocArray});
    if (chosen.coverage) {
        if (chosen.layout.callsOnly()) {
            AddRefs(pool, refs, {Probe::kCount});
        } else {
            AddRefs(pool, refs, {Probe::kCounters});
            refs.longArray = pool.Class("[J");
        }
    }
}

struct Rewritten {
    std::vector<std::uint8_t> codeAttribute;
    std::int64_t tracked = -1;  // new offset of Chosen::track
};

Rewritten RewriteMethod(const ParsedClass &pc, std::size_t i, const Chosen &chosen, const ProbeRefs &refs,
                        PoolAppender &pool) {
    const MethodCode mc = ReadMethodCode(pc, pc.methods[i]);
    MethodEdit edit;
    if (chosen.call) PlanCalls(mc, pc.decl.methods[i], *chosen.call, refs, edit);
    if (chosen.alloc) PlanAllocation(mc, *chosen.alloc, chosen.superCallAt, refs, edit);
    if (chosen.coverage) {
        PlanCoverage(mc, chosen.layout, *chosen.coverage, InitialLocals(pc, pc.decl.methods[i], pool), refs, edit);
    }
    if (!chosen.sites.empty()) PlanSites(mc, chosen.sites, refs, edit);
    if (!chosen.arrays.empty()) PlanArrays(mc, chosen.arrays, refs, edit);
    const Layout layout(mc, edit);
    Rewritten out;
    out.codeAttribute = layout.Write(pool);
    if (chosen.track) out.tracked = layout.InstructionAt(*chosen.track, "tracked offset");
    return out;
}

// The new Code attribute, or empty when the method is left alone (and reported so).
std::vector<std::uint8_t> InstrumentMethod(const ClassJob &job, std::size_t i, const Chosen &chosen,
                                           PoolAppender &pool, ProbeRefs &refs) {
    InstrumentResult &result = job.result;
    try {
        AddRefsFor(job.pc, chosen, pool, refs);
        Rewritten rw = RewriteMethod(job.pc, i, chosen, refs, pool);
        if (chosen.track) result.delegationOffsets[i] = rw.tracked;
        if (chosen.call) ++result.instrumented;
        if (chosen.alloc) ++result.allocProbed;
        result.sitesProbed += static_cast<unsigned>(chosen.sites.size());
        result.arraysProbed += static_cast<unsigned>(chosen.arrays.size());
        if (chosen.coverage) result.coverage.push_back({i, *chosen.coverage, chosen.layout});
        return std::move(rw.codeAttribute);
    } catch (const SkipMethod &e) {
        const MethodDecl &d = job.pc.decl.methods[i];
        const std::string why = d.name + d.descriptor + ": " + e.what();
        if (chosen.call) result.skipped.push_back(why);
        if (chosen.alloc) result.allocSkipped.push_back(why);
        if (!chosen.sites.empty()) result.sitesSkipped.push_back(why);
        if (!chosen.arrays.empty()) result.arraysSkipped.push_back(why);
        if (chosen.coverage) result.coverageSkipped.push_back(why);
        return {};
    }
}

// ---- Writing the class ------------------------------------------------------------------

// The class with the pool's new entries and the new Code attributes; the rest as it was.
std::vector<std::uint8_t> WriteClass(std::span<const std::uint8_t> classBytes, const ParsedClass &pc,
                                     const PoolAppender &pool, const std::vector<std::vector<std::uint8_t>> &newCode) {
    Writer w;
    w.Bytes(classBytes.subspan(0, 8));  // magic, minor, major
    w.U2(pool.count());
    w.Bytes(classBytes.subspan(pc.cp.begin, pc.cp.end - pc.cp.begin));
    w.Bytes(pool.bytes());
    const std::size_t afterMethods = pc.methods.empty() ? pc.methodsCountAt + 2 : pc.methods.back().end;
    w.Bytes(classBytes.subspan(pc.cp.end, pc.methodsCountAt + 2 - pc.cp.end));
    for (std::size_t i = 0; i < pc.methods.size(); ++i) {
        const Method &m = pc.methods[i];
        if (newCode[i].empty()) {
            w.Bytes(classBytes.subspan(m.start, m.end - m.start));
            continue;
        }
        const Attribute &a = m.attrs[static_cast<std::size_t>(m.code)];
        w.Bytes(classBytes.subspan(m.start, a.start - m.start));
        w.Bytes(newCode[i]);
        w.Bytes(classBytes.subspan(a.body + a.length, m.end - (a.body + a.length)));
    }
    w.Bytes(classBytes.subspan(afterMethods));
    return std::move(w.out);
}

bool AnyProbed(const InstrumentResult &r) {
    return r.instrumented != 0 || r.allocProbed != 0 || r.sitesProbed != 0 || r.arraysProbed != 0 ||
           !r.coverage.empty();
}

// A malformed method body (FormatError) or a failing selector: the class is left alone.
void Reject(InstrumentResult &result, const char *error) {
    result.parsed = false;
    result.changed = false;
    result.instrumented = 0;
    result.allocProbed = 0;
    result.sitesProbed = 0;
    result.arraysProbed = 0;
    result.coverage.clear();
    result.delegationOffsets.clear();
    result.bytes.clear();
    result.error = error;
}

}  // namespace

// ---- Public -----------------------------------------------------------------------------

InstrumentResult ParseClass(std::span<const std::uint8_t> classBytes) {
    InstrumentResult result;
    try {
        result.decl = Parse(classBytes).decl;
        result.parsed = true;
    } catch (const std::exception &e) {
        result.error = e.what();
    }
    return result;
}

InstrumentResult InstrumentClass(std::span<const std::uint8_t> classBytes, const Selectors &selectors) {
    InstrumentResult result;
    ParsedClass pc;
    try {
        pc = Parse(classBytes);
    } catch (const std::exception &e) {
        result.error = e.what();
        return result;
    }
    result.parsed = true;
    result.decl = pc.decl;
    if (pc.decl.internalName == kProbesClass) return result;  // never probe the probes

    try {
        ClassJob job{pc, selectors, result};
        job.allocId = ChooseAllocClass(pc, selectors.allocs, result);
        PoolAppender pool(pc.cp);
        ProbeRefs refs;
        std::vector<std::vector<std::uint8_t>> newCode(pc.methods.size());
        for (std::size_t i = 0; i < pc.methods.size(); ++i) {
            if (!pc.decl.methods[i].hasCode) continue;
            const Chosen chosen = Choose(job, i);
            if (!chosen.empty()) newCode[i] = InstrumentMethod(job, i, chosen, pool, refs);
        }
        if (!AnyProbed(result)) return result;
        result.bytes = WriteClass(classBytes, pc, pool, newCode);
        result.changed = true;
    } catch (const std::exception &e) {
        Reject(result, e.what());
    }
    return result;
}

std::vector<std::string> SkippedSummary(std::string_view className, const InstrumentResult &result) {
    struct Kind {
        const std::vector<std::string> &methods;
        const char *one;   // said of one method
        const char *many;  // said of several
    };
    const Kind kinds[] = {
        {result.skipped, "the method is left as it is (no call events)", "left as they are (no call events)"},
        {result.allocSkipped, "no allocation probe (objects it constructs are not reported)",
         "without allocation probe (objects they construct are not reported)"},
        {result.sitesSkipped, "no site probes (its thread interactions are not reported)",
         "without site probes (their thread interactions are not reported)"},
        {result.arraysSkipped, "no array probes (arrays it allocates are not reported)",
         "without array probes (arrays they allocate are not reported)"},
        {result.coverageSkipped, "no coverage probes (it is not in the coverage report)",
         "without coverage probes (they are not in the coverage report)"},
    };
    std::vector<std::string> lines;
    const std::string cls(className);
    for (const Kind &k : kinds) {
        if (k.methods.size() == 1) {
            lines.push_back(cls + "." + k.methods[0] + "; " + k.one);
        } else if (k.methods.size() > 1) {
            lines.push_back(cls + ": " + std::to_string(k.methods.size()) + " methods " + k.many + "; the first, " +
                            k.methods[0]);
        }
    }
    return lines;
}

}  // namespace martini::jvm
