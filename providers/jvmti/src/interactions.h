// Interactions: ThreadInteraction events and thread parents, both from site probes
// placed before calls of Object.notify/notifyAll and Thread.start/join/sleep/interrupt.
// Owns the call-site records, their selector and the probes' natives, the receiver
// checks against java.lang.Thread's own methods, and the parents of threads started
// from probed sites until their ThreadStart takes them.
//
// Locks: mutex_ guards the appends to sites_, siteByLocation_ and parentByThreadTag_.
// The probes read sites_ without a lock (RecordTable: written before the class's code
// reaches the JVM).
#pragma once

#include "classes.h"

#include <map>
#include <mutex>
#include <unordered_map>

namespace martini::jvm {

// One per call site that got a site probe; the probe passes its id.
struct SiteRecord {
    TId methodId = 0;          // the method containing the call
    Interaction kind = Interaction::kNotify;
    std::uint8_t opcode = 0;   // invokevirtual / invokespecial / invokestatic
    std::string owner;         // the call's Methodref class ("java/lang/Thread", "app/Worker")
    std::string name;          // "start"
    ClientMask interest = 0;   // the thread-interaction filters' answer for methodId
};

class Interactions {
public:
    // Agent_OnLoad: whether some client observes ThreadInteraction, and whether some
    // wants ThreadStart's DR_THREAD_PARENT_ID (both need site probes).
    static void Decide();
    static bool Wanted() { return interactions_ || parents_; }
    static bool ParentsWanted() { return parents_; }
    static void AddCapabilities(jvmtiCapabilities &caps) {
        if (Wanted()) caps.can_tag_objects = 1;  // receivers' ids; started threads' parents
    }
    // The rewriter's site selector for a class being loaded (empty when not wanted).
    static SiteSelector Selector(ClassLoad &load);
    // VMInit: java.lang.Thread and its start()/interrupt(), for the receiver checks.
    static void FindThreadClass(JNIEnv *jni);
    // ThreadStart: the thread that started the thread whose object has this tag, from
    // a probed Thread.start() site (0: none); forgotten after.
    static TId TakeParent(TId threadTag);

    // The natives Probes.interaction / interactionStatic (no receiver).
    static void JNICALL OnSite(JNIEnv *jni, jclass, jobject receiver, jint site) noexcept;
    static void JNICALL OnStaticSite(JNIEnv *jni, jclass, jint site) noexcept;

private:
    using SiteTable = RecordTable<SiteRecord, 1024, 4096>;  // up to 4 Mi call sites
    // A site probe id for the call at `site` of method `methodId` (kNoProbe: table full).
    static std::int64_t ProbeFor(TId methodId, const CallSite &site, ClientMask interest);
    // Whether the call at `site` on `receiver` reaches java.lang.Thread's own method.
    static bool ReachesThreadMethod(JNIEnv *jni, jobject receiver, const SiteRecord &site);
    static void Report(JNIEnv *jni, jobject receiver, std::int32_t siteId);
    static void Raise(JNIEnv *jni, jobject receiver, TId objectId, TId threadId, const SiteRecord &site);

    static inline bool interactions_ = false, parents_ = false;  // written once, in Agent_OnLoad
    static inline jclass threadClass_ = nullptr;                 // global ref, from VMInit
    static inline jmethodID threadStart_ = nullptr, threadInterrupt_ = nullptr;

    static inline std::mutex mutex_;
    static inline SiteTable sites_;
    static inline std::map<std::pair<TId, std::uint32_t>, TId> siteByLocation_;  // (method, offset) -> id
    static inline std::unordered_map<TId, TId> parentByThreadTag_;  // started Thread's tag -> caller's id
};

}  // namespace martini::jvm
