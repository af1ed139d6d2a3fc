// Rule sets: which methods, classes, monitors and call sites a client wants, as an
// ordered list of include/exclude rules. The first rule that matches an element
// decides; when none does, the default does. One rule set serves as the client's
// ICallGraphFilter, IHeapFilter, IMonitorFilter and IThreadInteractionFilter: Martini
// asks each filter once per element when the runtime instruments it, never per
// event (docs/filters.md).
//
// Two forms:
//
//   JSON (a file, given as "@path.json"):
//     {"default": "exclude",
//      "rules": [
//        {"action": "exclude", "class": "com.acme.internal.*"},
//        {"action": "include", "class": "com.acme.*", "method": "get?*",
//         "signature": "()*", "access": ["package_api"]}
//      ]}
//
//   One line (client options): rules separated by '|', each
//     +PATTERN or -PATTERN, optionally followed by (SIGNATURE-PATTERN) and @ACCESS[/ACCESS...]
//   where PATTERN matches "Class.method" for methods and call sites, and the class
//   name for allocations and monitors; the last item may be "default=include" or
//   "default=exclude" (default: exclude when any rule includes, else include):
//     +com.acme.*|-*.toString|-*.hashCode()I|+java.util.HashMap.put*@package_api
//
// Patterns: '*' matches any run of characters (also none), '?' exactly one.
// A rule that names a method, a signature or an access type does not apply to
// allocations and monitors (they have a class only).
#pragma once

#include <MpiAPI.h>

#include <string>
#include <string_view>
#include <vector>

namespace martini::filters {

struct Rule {
    bool include = true;
    // JSON form: separate patterns; one-line form: `name` matches "Class.method".
    std::string classPattern = "*";
    std::string methodPattern = "*";
    std::string namePattern;  // one-line form only ("" = not used)
    std::string signaturePattern = "*";
    unsigned accessMask = 0;  // bits (1 << EMethodAccessType); 0 = any

    bool NeedsMethod() const;  // names a method, signature or access type
};

class RuleSet {
public:
    RuleSet();
    RuleSet(const RuleSet &) = delete;
    RuleSet &operator=(const RuleSet &) = delete;

    // Each returns "" on success, else a message with the source, the position and
    // the reason; on failure the rule set is left empty (matches everything).
    std::string ParseLine(std::string_view line);
    std::string ParseJson(std::string_view text, const std::string &source);
    std::string LoadFile(const std::string &path);
    // "@path.json" -> LoadFile, anything else -> ParseLine.
    std::string Load(std::string_view spec);

    // A method or a call site (call graph, thread interaction).
    bool AcceptsMethod(std::string_view className, std::string_view methodName, std::string_view signature,
                       Martini::MPI::EMethodAccessType access) const;
    // An allocated object's class or a monitor's class.
    bool AcceptsClass(std::string_view className) const;

    const std::vector<Rule> &Rules() const { return rules_; }
    bool DefaultInclude() const { return defaultInclude_; }
    bool Empty() const { return rules_.empty(); }

    // The four MPI filters over this rule set (they live as long as it does).
    Martini::MPI::ICallGraphFilter &CallGraphFilter() { return callGraph_; }
    Martini::MPI::IHeapFilter &HeapFilter() { return heap_; }
    Martini::MPI::IMonitorFilter &MonitorFilter() { return monitor_; }
    Martini::MPI::IThreadInteractionFilter &ThreadInteractionFilter() { return interaction_; }

private:
    class CallGraph final : public Martini::MPI::ICallGraphFilter {
    public:
        explicit CallGraph(const RuleSet &r) : r_(r) {}
        bool ShouldNotify(Martini::MPI::SCallGraphFilterData &d) override;

    private:
        const RuleSet &r_;
    };
    class Heap final : public Martini::MPI::IHeapFilter {
    public:
        explicit Heap(const RuleSet &r) : r_(r) {}
        bool ShouldNotify(Martini::MPI::SHeapFilterData &d) override;

    private:
        const RuleSet &r_;
    };
    class Monitor final : public Martini::MPI::IMonitorFilter {
    public:
        explicit Monitor(const RuleSet &r) : r_(r) {}
        bool ShouldNotify(Martini::MPI::SMonitorFilterData &d) override;

    private:
        const RuleSet &r_;
    };
    class Interaction final : public Martini::MPI::IThreadInteractionFilter {
    public:
        explicit Interaction(const RuleSet &r) : r_(r) {}
        bool ShouldNotify(Martini::MPI::SThreadInteractionFilterData &d) override;

    private:
        const RuleSet &r_;
    };

    std::vector<Rule> rules_;
    bool defaultInclude_ = true;
    CallGraph callGraph_{*this};
    Heap heap_{*this};
    Monitor monitor_{*this};
    Interaction interaction_{*this};
};

// Loads `spec` (see RuleSet::Load) into `rules` and sets it as the client's filter
// for `group` (EG_CALL_GRAPH, EG_HEAP, EG_MONITOR or EG_THREAD_INTERACTION). For
// MPICL_Instantiate: returns MRTE_RESULT_OK, or prints one line "<tool>: <why>; <tool>
// does not start" and returns the result to refuse with.
Martini::MPI::TResult Install(RuleSet &rules, std::string_view spec, Martini::MPI::IMpi &mpi,
                              Martini::MPI::TId clientId, Martini::MPI::TEventGroup group, const char *tool);

// Checks a pattern; returns "" or why it is not one (empty, blank, control characters).
std::string CheckPattern(std::string_view pattern);

}  // namespace martini::filters
