// Reading a trace record's fields (docs/replay-format.md): each reader throws
// TraceError naming the field when it is missing or of the wrong kind.
#pragma once

#include "martini/mpi/mpi.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace martini::replay::trace {

using namespace Martini::MPI;
using json = nlohmann::json;

// A bad record: the message says what is wrong with it.
struct TraceError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

inline TId Id(const json &rec, const char *field) {
    auto it = rec.find(field);
    if (it == rec.end()) throw TraceError(std::string("missing field \"") + field + "\"");
    if (!it->is_number_unsigned() || it->get<TId>() == 0) {
        throw TraceError(std::string("field \"") + field + "\" must be a positive integer id");
    }
    return it->get<TId>();
}

inline TId OptionalId(const json &rec, const char *field) {
    return rec.contains(field) ? Id(rec, field) : 0;
}

inline std::string Text(const json &rec, const char *field, bool required = true) {
    auto it = rec.find(field);
    if (it == rec.end()) {
        if (required) throw TraceError(std::string("missing field \"") + field + "\"");
        return {};
    }
    if (!it->is_string()) throw TraceError(std::string("field \"") + field + "\" must be a string");
    return it->get<std::string>();
}

inline std::uint64_t Number(const json &rec, const char *field, std::uint64_t fallback) {
    auto it = rec.find(field);
    if (it == rec.end()) return fallback;
    if (!it->is_number_unsigned()) {
        throw TraceError(std::string("field \"") + field + "\" must be a non-negative integer");
    }
    return it->get<std::uint64_t>();
}

inline bool Flag(const json &rec, const char *field) {
    auto it = rec.find(field);
    if (it == rec.end()) return false;
    if (!it->is_boolean()) throw TraceError(std::string("field \"") + field + "\" must be true or false");
    return it->get<bool>();
}

inline EMethodAccessType AccessFromName(const std::string &s) {
    if (s.empty() || s == "package_api") return s.empty() ? MAT_NONE : MAT_PACKAGE_API;
    if (s == "package_internal") return MAT_PACKAGE_INTERNAL;
    if (s == "class_internal") return MAT_CLASS_INTERNAL;
    throw TraceError("field \"access\" must be package_api, package_internal or class_internal, not \"" +
                     s + "\"");
}

inline EObjectArrayType ArrayTypeFromName(const std::string &s) {
    static const std::pair<const char *, EObjectArrayType> kNames[] = {
        {"object", OAT_OBJECT}, {"boolean", OAT_BOOLEAN}, {"byte", OAT_BYTE},
        {"char", OAT_CHAR},     {"short", OAT_SHORT},     {"int", OAT_INT},
        {"long", OAT_LONG},     {"float", OAT_FLOAT},     {"double", OAT_DOUBLE}};
    for (const auto &[name, type] : kNames) {
        if (s == name) return type;
    }
    throw TraceError("field \"array\" must name an element type (object, int, ...), not \"" + s + "\"");
}

inline EThreadInteractionType InteractionFromName(const std::string &s) {
    static const std::pair<const char *, EThreadInteractionType> kNames[] = {
        {"notify", IT_NOTIFY}, {"notify_all", IT_NOTIFY_ALL}, {"start", IT_START},
        {"join", IT_JOIN},     {"sleep", IT_SLEEP},           {"interrupt", IT_INTERRUPT}};
    for (const auto &[name, type] : kNames) {
        if (s == name) return type;
    }
    throw TraceError("field \"type\" must be notify, notify_all, start, join, sleep or interrupt, not \"" +
                     s + "\"");
}

}  // namespace martini::replay::trace
