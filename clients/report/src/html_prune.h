// What the HTML report embeds of a large profile (profile.h: HtmlOptions): its trees
// pruned to a node budget, and what the page needs to say so and keep its top table
// exact. Internal to the report library.
#pragma once

#include "martini/report/views.h"

#include <nlohmann/json.hpp>

namespace martini::report::detail {

struct HtmlProfile {
    Profile profile;    // the pruned trees over the frames they use (no spans)
    nlohmann::json extra;  // for the page's <script id="martini-html">
    HtmlStats stats;
};

// Fills `out` and returns true when the profile's trees hold more than the budget's
// calling contexts; else returns false with only out.stats.contexts set (the profile
// is embedded as it is).
bool PruneForHtml(const Profile &profile, const HtmlOptions &options, HtmlProfile &out);

}  // namespace martini::report::detail
