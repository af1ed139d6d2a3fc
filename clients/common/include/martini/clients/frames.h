// A method as a report frame (martini/report/profile.h): names, signature, source
// file and first line through MPI data requests. For clients, when they build their
// profile at the end (never on an event path).
#pragma once

#include <MpiAPI.h>

#include "martini/clients/names.h"
#include "martini/report/profile.h"

#include <string>

namespace martini::clients {

// "Class.method" (overloads are told apart later by report::NameOverloads), or
// "method#ID" when the runtime cannot name it.
inline report::Frame MethodFrame(Martini::MPI::IMpi &mpi, Martini::MPI::TId clientId, Martini::MPI::TId methodId) {
    const MethodNames names = GetMethodNames(mpi, clientId, methodId);
    report::Frame f;
    f.className = names.className;
    f.method = names.method;
    f.signature = names.signature;
    f.file = names.sourceFile;
    f.name = names.ok ? (f.className.empty() ? f.method : f.className + "." + f.method) : "method#" + std::to_string(methodId);
    f.line = GetMethodFirstLine(mpi, clientId, methodId);
    return f;
}

}  // namespace martini::clients
