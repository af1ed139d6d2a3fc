// The self-contained HTML report: html/report.html (embedded at build time) with the
// profile's JSON inlined, so the file opens anywhere without network access.
#include "martini/report/profile.h"

#include <ostream>
#include <sstream>
#include <string>
#include <string_view>

namespace martini::report {

extern const char kHtmlTemplate[];

void WriteHtml(const Profile &profile, std::ostream &out) {
    std::ostringstream json;
    WriteJson(profile, json, /*withSpans=*/false);  // slices belong in the Chrome trace
    // Inside <script type="application/json"> the text must not contain "</script" or
    // "<!--": '<' only occurs inside JSON strings, where \u003c means the same.
    std::string data;
    for (char c : json.str()) {
        if (c == '<') data += "\\u003c";
        else data += c;
    }
    const std::string_view page(kHtmlTemplate);
    constexpr std::string_view kMarker = "/*MARTINI_PROFILE_JSON*/";
    const std::size_t at = page.find(kMarker);
    if (at == std::string_view::npos) {
        out << page;
        return;
    }
    std::string title = profile.tool + (profile.mode.empty() ? "" : " (" + profile.mode + ")");
    constexpr std::string_view kTitle = "MARTINI_TITLE";
    std::string head(page.substr(0, at));
    if (const std::size_t t = head.find(kTitle); t != std::string::npos) {
        std::string escaped;
        for (char c : title) {
            if (c == '<') escaped += "&lt;";
            else if (c == '&') escaped += "&amp;";
            else escaped += c;
        }
        head.replace(t, kTitle.size(), escaped);
    }
    out << head << data << page.substr(at + kMarker.size());
}

}  // namespace martini::report
