// Internal to the class-file rewriter: one planner per probe kind. Each finds where
// its probes can go in a method and adds them to the method's MethodEdit (layout.h)
// as insertions with their emitters; the layout pass does the rest.
#pragma once

#include "class_file.h"
#include "instrumenter.h"
#include "layout.h"
#include "probes.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace martini::jvm::detail {

// The constant pool entries the emitted code refers to (0: not added).
struct ProbeRefs {
    std::array<std::uint16_t, kProbeCount> method{};  // Methodrefs, by Probe
    std::uint16_t throwable = 0;                       // java/lang/Throwable, for the catch-all frames
    std::uint16_t stackOverflow = 0;                   // java/lang/StackOverflowError, caught at the enter probe
    std::uint16_t lostEnters = 0;                      // Fieldref Probes.lostEnters
    std::uint16_t thisClass = 0;                       // the class's own Class; 0: the allocByClassId form
    std::uint16_t longArray = 0;                       // [J, the coverage counters' frame type
    std::uint16_t operator[](Probe p) const { return method[ProbeIndex(p)]; }
};

// ---- Call probes: enter, leave before each return, leaveExceptional in catch-alls ----

void PlanCalls(const MethodCode &mc, const MethodDecl &d, std::int32_t id, const ProbeRefs &refs, MethodEdit &edit);

// ---- Allocation probes: after a constructor's super() call ---------------------------

// Where a constructor's super()/this() call is, and which of the two it is.
struct CtorShape {
    std::uint32_t initAt = 0;  // old offset of the invokespecial <init> on uninitializedThis
    bool delegates = false;    // this(...): a constructor of the same class
};

// Throws SkipMethod when the constructor cannot get an allocation probe safely.
CtorShape AnalyzeConstructor(const ParsedClass &pc, const Method &m);

void PlanAllocation(const MethodCode &mc, std::int32_t id, std::uint32_t superCallAt, const ProbeRefs &refs,
                    MethodEdit &edit);

// ---- Site probes: before thread-interaction calls -----------------------------------

struct SiteChoice {
    std::uint32_t at = 0;  // old offset of the call
    std::int32_t id = 0;
    bool receiver = true;  // pass the receiver (not for the static sleep)
    std::string args;      // the call's parameters, one character each ("JI"); spilled to locals
};

// The candidate call sites of a method's code, in code order.
std::vector<CallSite> FindCallSites(const ParsedClass &pc, const Code &code);

SiteChoice SiteChoiceFor(const CallSite &site, std::int32_t id);

void PlanSites(const MethodCode &mc, const std::vector<SiteChoice> &sites, const ProbeRefs &refs, MethodEdit &edit);

// ---- Array allocation probes: after newarray/anewarray/multianewarray ----------------

struct ArrayChoice {
    std::uint32_t at = 0;  // old offset of the allocation
    std::int32_t id = 0;
};

// The array allocation instructions of a method's code, in code order.
std::vector<ArraySite> FindArraySites(const ParsedClass &pc, const Code &code);

void PlanArrays(const MethodCode &mc, const std::vector<ArrayChoice> &arrays, const ProbeRefs &refs,
                MethodEdit &edit);

// ---- Coverage probes: a counter at each block start and on each branch outcome --------

// The blocks and conditional branches of a method's code (`lines`: its line table).
CoverageLayout FindCoverageLayout(const Code &code, const std::vector<LineEntry> &lines);

// The frame locals a method starts with (JVMS 4.10.1.6): `this` (uninitializedThis in
// a constructor, but Object's), then the parameters; reference types as Class constants
// added to `pool`.
std::vector<VType> InitialLocals(const ParsedClass &pc, const MethodDecl &d, PoolAppender &pool);

// Call before PlanSites (the counters' local comes first past max_locals).
void PlanCoverage(const MethodCode &mc, const CoverageLayout &layout, std::uint32_t index, std::vector<VType> initial,
                  const ProbeRefs &refs, MethodEdit &edit);

}  // namespace martini::jvm::detail
