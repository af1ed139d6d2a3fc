// The self-contained HTML report: html/report.html (embedded at build time) with the
// profile's JSON inlined, so the file opens anywhere without network access. Large
// profiles are pruned first (html_prune.cpp), so the page stays light to open.
#include "martini/report/views.h"

#include "html_prune.h"

#include <ostream>
#include <sstream>
#include <string>
#include <string_view>

namespace martini::report {

extern const char kHtmlTemplate[];

namespace {

// Inside <script type="application/json"> the text must not contain "</script" or
// "<!--": '<' only occurs inside JSON strings, where \u003c means the same.
std::string ScriptSafe(const std::string &json) {
    std::string data;
    data.reserve(json.size());
    for (char c : json) {
        if (c == '<') data.append("\\u003c");
        else data.push_back(c);
    }
    return data;
}

std::string HtmlEscaped(const std::string &text) {
    std::string escaped;
    for (char c : text) {
        if (c == '<') escaped.append("&lt;");
        else if (c == '&') escaped.append("&amp;");
        else escaped.push_back(c);
    }
    return escaped;
}

// Replaces the first `marker` in `page` by `text` (when there is one).
void Fill(std::string &page, std::string_view marker, const std::string &text) {
    if (const std::size_t at = page.find(marker); at != std::string::npos) page.replace(at, marker.size(), text);
}

}  // namespace

HtmlStats WriteHtml(const Profile &profile, std::ostream &out, const HtmlOptions &options) {
    detail::HtmlProfile pruned;
    const bool isPruned = detail::PruneForHtml(profile, options, pruned);
    const Profile &shown = isPruned ? pruned.profile : profile;
    std::ostringstream json;
    WriteJson(shown, json, /*withSpans=*/false);  // slices belong in the Chrome trace
    std::string title = profile.tool;
    if (!profile.mode.empty()) title.append(" (").append(profile.mode).append(")");
    std::string page(kHtmlTemplate);
    Fill(page, "MARTINI_TITLE", HtmlEscaped(title));
    nlohmann::json extra = isPruned ? pruned.extra : nlohmann::json::object();
    if (!options.diff.metric.empty()) {
        extra["diff"] = {{"metric", options.diff.metric}, {"base", options.diff.base}, {"new", options.diff.now}};
    }
    // The profile last: its text is not searched for markers.
    Fill(page, "/*MARTINI_HTML_EXTRA*/", ScriptSafe(extra.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
    constexpr std::string_view kMarker = "/*MARTINI_PROFILE_JSON*/";
    const std::size_t at = page.find(kMarker);
    if (at == std::string::npos) {
        out << page;
    } else {
        out << std::string_view(page).substr(0, at) << ScriptSafe(json.str())
            << std::string_view(page).substr(at + kMarker.size());
    }
    return pruned.stats;
}

void WriteHtml(const Profile &profile, std::ostream &out) { WriteHtml(profile, out, HtmlOptions{}); }

}  // namespace martini::report
