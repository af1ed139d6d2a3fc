// The agent's option string: "<client>[=<options>][;<client>[=<options>]]..." (see
// client_spec.h) or "@<file.json>" holding {"clients": [{"client": "callcount",
// "options": "top=5"}], "output": "DIR"}.
#include "agent_config.h"

#include <nlohmann/json.hpp>

#include <fstream>

namespace martini::jvm {
namespace {

// "@file.json" -> the same list as the text form, and the output directory.
std::string ReadJsonConfig(const std::string &path, std::vector<core::ClientSpec> &out, std::string &outputDirectory) {
    std::ifstream in(path);
    if (!in) return "cannot read the configuration file '" + path + "'";
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(in);
    } catch (const nlohmann::json::parse_error &e) {
        return "configuration file '" + path + "': " + e.what();
    }
    if (!j.is_object()) return "configuration file '" + path + "': expected an object with \"clients\"";
    for (auto it = j.begin(); it != j.end(); ++it) {
        if (it.key() != "clients" && it.key() != "output") {
            return "configuration file '" + path + "': unknown field \"" + it.key() + "\"";
        }
    }
    if (const auto output = j.find("output"); output != j.end()) {
        if (!output->is_string() || output->get<std::string>().empty()) {
            return "configuration file '" + path + "': \"output\" must be a directory name";
        }
        outputDirectory = output->get<std::string>();
    }
    const auto clients = j.find("clients");
    if (clients == j.end() || !clients->is_array()) {
        return "configuration file '" + path + "': \"clients\" must be an array";
    }
    for (std::size_t i = 0; i < clients->size(); ++i) {
        const auto &c = (*clients)[i];
        const std::string where = "configuration file '" + path + "': clients[" + std::to_string(i) + "]";
        if (!c.is_object() || !c.contains("client") || !c["client"].is_string()) {
            return where + " needs a \"client\" string";
        }
        for (auto f = c.begin(); f != c.end(); ++f) {
            if (f.key() != "client" && f.key() != "options") return where + ": unknown field \"" + f.key() + "\"";
        }
        core::ClientSpec spec;
        spec.name = c["client"].get<std::string>();
        if (c.contains("options")) {
            if (!c["options"].is_string()) return where + ": \"options\" must be a string";
            spec.options = c["options"].get<std::string>();
        }
        out.push_back(std::move(spec));
    }
    return {};
}

}  // namespace

std::string ParseAgentConfig(const char *options, AgentConfig &out) {
    const std::string config = options ? options : "";
    return !config.empty() && config[0] == '@' ? ReadJsonConfig(config.substr(1), out.clients, out.outputDirectory)
                                               : core::ParseClientList(config, out.clients);
}

}  // namespace martini::jvm
