// The command-line conventions every Martini command shares (martini run, report,
// convert, replay, control; martini-replay), on CLI11: the same help layout (our usage
// lines, then the options CLI11 lists), the same --version, and errors printed as
// "PROGRAM: MESSAGE" with a pointer to --help, exit status 1.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>
#include <string>

#ifndef MARTINI_VERSION
#define MARTINI_VERSION "unknown"
#endif

namespace martini::tools {

inline constexpr const char *kVersion = MARTINI_VERSION;

// Help: `usage` (our hand-written synopsis lines) replaces CLI11's one-line usage.
class UsageFormatter : public CLI::Formatter {
public:
    explicit UsageFormatter(std::string usage) : usage_(std::move(usage)) { column_width(22); }
    // The usage lines first, then the description.
    std::string make_usage(const CLI::App *app, std::string) const override {
        const std::string description = app->get_description();
        return usage_ + "\n" + (description.empty() ? "" : "\n" + description + "\n");
    }
    std::string make_description(const CLI::App *) const override { return ""; }

private:
    std::string usage_;
};

// An App called `program` ("martini run", "martini-replay"), with our help layout,
// -h/--help and --version.
inline void Configure(CLI::App &app, const std::string &usage, const std::string &footer = "") {
    app.formatter(std::make_shared<UsageFormatter>(usage));
    app.set_help_flag("-h,--help", "this text");
    app.set_version_flag("--version", std::string(app.get_name()) + " " + kVersion, "print the version and exit");
    if (!footer.empty()) app.footer(footer);
}

// Parses; returns -1 to go on, else the exit status (help and version: 0, printed on
// stdout; errors: 1, printed on stderr).
inline int Parse(CLI::App &app, int argc, const char *const *argv) {
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp &) {
        std::fputs(app.help().c_str(), stdout);
        return 0;
    } catch (const CLI::CallForAllHelp &) {
        std::fputs(app.help("", CLI::AppFormatMode::All).c_str(), stdout);
        return 0;
    } catch (const CLI::CallForVersion &) {
        std::printf("%s\n", app.version().c_str());
        return 0;
    } catch (const CLI::ParseError &e) {
        std::fprintf(stderr, "%s: %s\nRun '%s --help' for more information.\n", app.get_name().c_str(), e.what(),
                     app.get_name().c_str());
        return 1;
    }
    return -1;
}

}  // namespace martini::tools
