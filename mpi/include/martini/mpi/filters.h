// Martini Profiling Interface: event-group filters.
//
// A filter decides, once per element (method, class, call site) when the runtime
// instruments that element (class load, JIT), whether the client wants the group's
// events for it. It is never called per event, so it may be slow-ish (string
// compares, pattern matching); a method that no client wants is not instrumented and
// costs nothing at run time. Martini caches every answer for the life of the element.
//
// Threading: ShouldNotify may be called on any runtime thread (the one loading the
// class), possibly on several threads at once; it must be thread-safe and must not
// call back into the runtime. The data's strings are valid only during the call.
#pragma once

#include "martini/mpi/base.h"

namespace Martini {
namespace MPI {

class IEventFilter {
public:
    virtual ~IEventFilter() {}
    // The event group this filter restricts. Implemented by each filter interface.
    virtual EEventGroup Group() = 0;
};

// EG_CALL_GRAPH: which methods raise MethodEnter/MethodLeave.
struct SCallGraphFilterData {
    const char *szClassName;        // source form: com.acme.Foo$Inner
    const char *szMethodName;       // "<init>" / ".ctor" for constructors
    const char *szMethodSignature;  // runtime's own form: "(ILjava/lang/String;)V"
    EMethodAccessType methodAccessType;
};

class ICallGraphFilter : public IEventFilter {
public:
    EEventGroup Group() final { return EG_CALL_GRAPH; }
    virtual bool ShouldNotify(SCallGraphFilterData &data) = 0;
};

// EG_HEAP: which classes' objects raise ObjectAlloc/ObjectFree.
struct SHeapFilterData {
    const char *szClassName;  // class of the allocated objects; arrays as "int[]"
};

class IHeapFilter : public IEventFilter {
public:
    EEventGroup Group() final { return EG_HEAP; }
    virtual bool ShouldNotify(SHeapFilterData &data) = 0;
};

// EG_MONITOR: monitors of which classes' objects raise monitor events.
struct SMonitorFilterData {
    const char *szClassName;  // class of the monitor's object
};

class IMonitorFilter : public IEventFilter {
public:
    EEventGroup Group() final { return EG_MONITOR; }
    virtual bool ShouldNotify(SMonitorFilterData &data) = 0;
};

// EG_THREAD_INTERACTION: which call sites (by the method containing them) raise
// ThreadInteraction events.
struct SThreadInteractionFilterData {
    const char *szClassName;        // class of the method containing the call site
    const char *szMethodName;
    const char *szMethodSignature;
};

class IThreadInteractionFilter : public IEventFilter {
public:
    EEventGroup Group() final { return EG_THREAD_INTERACTION; }
    virtual bool ShouldNotify(SThreadInteractionFilterData &data) = 0;
};

// EG_COVERAGE: which methods have their blocks counted (IMpi::RequestCoverage). Asked
// once per method when the runtime instruments it; a method nobody wants costs nothing.
struct SCoverageFilterData {
    const char *szClassName;        // source form: com.acme.Foo$Inner
    const char *szMethodName;
    const char *szMethodSignature;  // runtime's own form
    const char *szSourceFileName;   // as the runtime knows it ("Foo.java", "lib/tree.lua"); "" when unknown
};

class ICoverageFilter : public IEventFilter {
public:
    EEventGroup Group() final { return EG_COVERAGE; }
    virtual bool ShouldNotify(SCoverageFilterData &data) = 0;
};

}  // namespace MPI
}  // namespace Martini
