// What the agent's option string asks for: the clients to load and, optionally, the
// output directory raised as EcSetOutputDirectory at VM start (`martini run --output`).
#pragma once

#include "martini/core/core.h"

#include <string>
#include <vector>

namespace martini::jvm {

struct AgentConfig {
    std::vector<core::ClientSpec> clients;
    std::string outputDirectory;  // empty: none given
};

// Parses `options` (the text after -agentpath:...=; may be null). Returns "" or the
// one-line reason the configuration is refused.
std::string ParseAgentConfig(const char *options, AgentConfig &out);

}  // namespace martini::jvm
