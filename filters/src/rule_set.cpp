#include "martini/filters/rule_set.h"

#include "martini/filters/glob.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace martini::filters {

using namespace Martini::MPI;

namespace {

struct AccessName {
    const char *name;
    EMethodAccessType value;
};
constexpr AccessName kAccessNames[] = {
    {"package_api", MAT_PACKAGE_API},
    {"package_internal", MAT_PACKAGE_INTERNAL},
    {"class_internal", MAT_CLASS_INTERNAL},
};

bool AccessFromName(std::string_view name, unsigned &mask) {
    for (const auto &a : kAccessNames) {
        if (name == a.name) {
            mask |= 1u << a.value;
            return true;
        }
    }
    return false;
}

// Default when the rule set does not say: exclude the rest when some rule includes
// (a list of what you want), include the rest otherwise (a list of what you don't).
bool ImpliedDefault(const std::vector<Rule> &rules) {
    for (const Rule &r : rules) {
        if (r.include) return false;
    }
    return true;
}


}  // namespace

bool Rule::NeedsMethod() const {
    return methodPattern != "*" || signaturePattern != "*" || accessMask != 0;
}

std::string CheckPattern(std::string_view pattern) {
    if (pattern.empty()) return "empty pattern";
    for (unsigned char c : pattern) {
        if (c < 0x20 || c == 0x7f) return "control character in pattern";
        if (c == ' ' || c == '\t') return "blank in pattern \"" + std::string(pattern) + "\"";
    }
    return "";
}

RuleSet::RuleSet() = default;

std::string RuleSet::ParseLine(std::string_view line) {
    rules_.clear();
    defaultInclude_ = true;
    std::vector<Rule> rules;
    int explicitDefault = -1;
    std::size_t start = 0;
    unsigned index = 0;
    while (start <= line.size()) {
        std::size_t end = line.find('|', start);
        if (end == std::string_view::npos) end = line.size();
        const std::string_view item = line.substr(start, end - start);
        const std::string where = "filter rule " + std::to_string(index + 1) + " (column " + std::to_string(start + 1) +
                                  ") \"" + std::string(item) + "\": ";
        ++index;
        if (item == "default=include" || item == "default=exclude") {
            if (end != line.size()) return (rules_.clear(), where + "default= must come last");
            explicitDefault = item == "default=include";
        } else {
            if (item.empty()) return where + "empty rule (two '|' in a row, or one at an end)";
            if (item[0] != '+' && item[0] != '-') return where + "a rule starts with + (include) or - (exclude)";
            Rule r;
            r.include = item[0] == '+';
            std::string_view rest = item.substr(1);
            if (const std::size_t at = rest.rfind('@'); at != std::string_view::npos) {
                std::string_view access = rest.substr(at + 1);
                rest = rest.substr(0, at);
                while (!access.empty()) {
                    const std::size_t slash = access.find('/');
                    const std::string_view one = access.substr(0, slash);
                    if (!AccessFromName(one, r.accessMask)) {
                        return where + "unknown access type \"" + std::string(one) +
                               "\" (package_api, package_internal, class_internal)";
                    }
                    access = slash == std::string_view::npos ? std::string_view() : access.substr(slash + 1);
                }
                if (r.accessMask == 0) return where + "'@' needs an access type";
            }
            if (const std::size_t paren = rest.find('('); paren != std::string_view::npos) {
                r.signaturePattern = std::string(rest.substr(paren));
                rest = rest.substr(0, paren);
                if (r.signaturePattern.find(')') == std::string::npos && r.signaturePattern.find('*') == std::string::npos) {
                    return where + "signature pattern \"" + r.signaturePattern + "\" has no ')'";
                }
            }
            if (std::string e = CheckPattern(rest); !e.empty()) return where + e;
            if (std::string e = CheckPattern(r.signaturePattern); !e.empty()) return where + e;
            r.namePattern = std::string(rest);
            rules.push_back(std::move(r));
        }
        if (end == line.size()) break;
        start = end + 1;
    }
    if (rules.empty() && explicitDefault < 0) return "filter: no rules";
    defaultInclude_ = explicitDefault < 0 ? ImpliedDefault(rules) : explicitDefault == 1;
    rules_ = std::move(rules);
    return "";
}

std::string RuleSet::ParseJson(std::string_view text, const std::string &source) {
    rules_.clear();
    defaultInclude_ = true;
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error &e) {
        // e.byte is the offset; turn it into line and column.
        std::size_t lineNo = 1, col = 1;
        for (std::size_t i = 0; i + 1 < e.byte && i < text.size(); ++i) {
            if (text[i] == '\n') {
                ++lineNo;
                col = 1;
            } else {
                ++col;
            }
        }
        std::string what = e.what();
        if (const std::size_t colon = what.find(": "); colon != std::string::npos) what = what.substr(colon + 2);
        return source + ":" + std::to_string(lineNo) + ":" + std::to_string(col) + ": not valid JSON: " + what;
    }
    auto fail = [&](const std::string &where, const std::string &why) { return source + ": " + where + ": " + why; };
    if (!j.is_object()) return fail("top level", "expected an object with \"rules\" (and \"default\")");
    for (auto it = j.begin(); it != j.end(); ++it) {
        if (it.key() != "rules" && it.key() != "default") {
            return fail("\"" + it.key() + "\"", "unknown field (a rule set has \"rules\" and \"default\")");
        }
    }
    const auto rulesIt = j.find("rules");
    if (rulesIt == j.end() || !rulesIt->is_array()) return fail("rules", "expected an array of rules");
    std::vector<Rule> rules;
    for (std::size_t i = 0; i < rulesIt->size(); ++i) {
        const nlohmann::json &rj = (*rulesIt)[i];
        const std::string at = "rules[" + std::to_string(i) + "]";
        if (!rj.is_object()) return fail(at, "expected an object");
        Rule r;
        bool haveAction = false;
        for (auto f = rj.begin(); f != rj.end(); ++f) {
            const std::string &key = f.key();
            const std::string fat = at + "." + key;
            if (key == "action") {
                if (!f->is_string() || (*f != "include" && *f != "exclude")) return fail(fat, "must be \"include\" or \"exclude\"");
                r.include = *f == "include";
                haveAction = true;
            } else if (key == "class" || key == "method" || key == "signature") {
                if (!f->is_string()) return fail(fat, "must be a pattern string");
                const std::string p = f->get<std::string>();
                if (std::string e = CheckPattern(p); !e.empty()) return fail(fat, e);
                if (key == "signature" && p != "*" && p[0] != '(' && p[0] != '*' && p[0] != '?') {
                    return fail(fat, "a signature pattern starts with '(' (the runtime's form, e.g. \"(I)V\")");
                }
                (key == "class" ? r.classPattern : key == "method" ? r.methodPattern : r.signaturePattern) = p;
            } else if (key == "access") {
                std::vector<std::string> names;
                if (f->is_string()) names.push_back(f->get<std::string>());
                else if (f->is_array()) {
                    for (const auto &n : *f) {
                        if (!n.is_string()) return fail(fat, "must be access type names");
                        names.push_back(n.get<std::string>());
                    }
                } else {
                    return fail(fat, "must be an access type name or an array of them");
                }
                for (const auto &n : names) {
                    if (!AccessFromName(n, r.accessMask)) {
                        return fail(fat, "unknown access type \"" + n + "\" (package_api, package_internal, class_internal)");
                    }
                }
            } else {
                return fail(fat, "unknown field (a rule has action, class, method, signature, access)");
            }
        }
        if (!haveAction) return fail(at, "missing \"action\" (\"include\" or \"exclude\")");
        rules.push_back(std::move(r));
    }
    bool def = ImpliedDefault(rules);
    if (const auto d = j.find("default"); d != j.end()) {
        if (!d->is_string() || (*d != "include" && *d != "exclude")) return fail("default", "must be \"include\" or \"exclude\"");
        def = *d == "include";
    }
    rules_ = std::move(rules);
    defaultInclude_ = def;
    return "";
}

std::string RuleSet::LoadFile(const std::string &path) {
    rules_.clear();
    defaultInclude_ = true;
    std::ifstream in(path, std::ios::binary);
    if (!in) return "cannot read the filter file '" + path + "': " + std::strerror(errno);
    std::ostringstream text;
    text << in.rdbuf();
    return ParseJson(text.str(), path);
}

std::string RuleSet::Load(std::string_view spec) {
    if (!spec.empty() && spec[0] == '@') return LoadFile(std::string(spec.substr(1)));
    return ParseLine(spec);
}

bool RuleSet::AcceptsMethod(std::string_view cls, std::string_view method, std::string_view signature,
                            EMethodAccessType access) const {
    // "Class.method", built once (on the stack for usual lengths) for one-line rules.
    char buffer[256];
    std::string heap;
    std::string_view full;
    auto fullName = [&]() -> std::string_view {
        if (full.data() != nullptr) return full;
        const std::size_t n = cls.size() + 1 + method.size();
        char *p = buffer;
        if (n > sizeof buffer) {
            heap.resize(n);
            p = heap.data();
        }
        std::memcpy(p, cls.data(), cls.size());
        p[cls.size()] = '.';
        std::memcpy(p + cls.size() + 1, method.data(), method.size());
        full = std::string_view(p, n);
        return full;
    };
    for (const Rule &r : rules_) {
        if (r.accessMask != 0 && !(r.accessMask & (1u << access))) continue;
        if (!r.namePattern.empty()) {
            if (r.namePattern != "*" && !GlobMatch(r.namePattern, fullName())) continue;
        } else {
            if (r.classPattern != "*" && !GlobMatch(r.classPattern, cls)) continue;
            if (r.methodPattern != "*" && !GlobMatch(r.methodPattern, method)) continue;
        }
        if (r.signaturePattern != "*" && !GlobMatch(r.signaturePattern, signature)) continue;
        return r.include;
    }
    return defaultInclude_;
}

bool RuleSet::AcceptsClass(std::string_view cls) const {
    for (const Rule &r : rules_) {
        if (r.NeedsMethod()) continue;
        const std::string &p = r.namePattern.empty() ? r.classPattern : r.namePattern;
        if (p != "*" && !GlobMatch(p, cls)) continue;
        return r.include;
    }
    return defaultInclude_;
}

namespace {
const char *GroupWord(TEventGroup group) {
    switch (group) {
        case EG_CALL_GRAPH: return "method";
        case EG_HEAP: return "class";
        case EG_MONITOR: return "monitor";
        default: return "call-site";
    }
}
}  // namespace

TResult Install(RuleSet &rules, std::string_view spec, IMpi &mpi, TId clientId, TEventGroup group, const char *tool) {
    if (std::string e = rules.Load(spec); !e.empty()) {
        std::fprintf(stderr, "%s: %s; %s does not start (it would not filter)\n", tool, e.c_str(), tool);
        return MRTE_ERROR_ILLEGAL_ARGUMENT;
    }
    IEventFilter *filter = group == EG_CALL_GRAPH ? static_cast<IEventFilter *>(&rules.CallGraphFilter())
                           : group == EG_HEAP     ? static_cast<IEventFilter *>(&rules.HeapFilter())
                           : group == EG_MONITOR  ? static_cast<IEventFilter *>(&rules.MonitorFilter())
                                                  : static_cast<IEventFilter *>(&rules.ThreadInteractionFilter());
    const TResult r = mpi.SetEventGroupFilter(clientId, group, *filter);
    if (r != MRTE_RESULT_OK) {
        std::fprintf(stderr, "%s: cannot set the %s filter (%s); %s does not start\n", tool, GroupWord(group),
                     ResultName(r), tool);
    }
    return r;
}

bool RuleSet::CallGraph::ShouldNotify(SCallGraphFilterData &d) {
    return r_.AcceptsMethod(d.szClassName ? d.szClassName : "", d.szMethodName ? d.szMethodName : "",
                            d.szMethodSignature ? d.szMethodSignature : "", d.methodAccessType);
}
bool RuleSet::Heap::ShouldNotify(SHeapFilterData &d) { return r_.AcceptsClass(d.szClassName ? d.szClassName : ""); }
bool RuleSet::Monitor::ShouldNotify(SMonitorFilterData &d) { return r_.AcceptsClass(d.szClassName ? d.szClassName : ""); }
bool RuleSet::Interaction::ShouldNotify(SThreadInteractionFilterData &d) {
    return r_.AcceptsMethod(d.szClassName ? d.szClassName : "", d.szMethodName ? d.szMethodName : "",
                            d.szMethodSignature ? d.szMethodSignature : "", MAT_NONE);
}

}  // namespace martini::filters
