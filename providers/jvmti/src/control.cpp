#include "control.h"

#include "vm.h"
#include "martini/core/log.h"

namespace martini::jvm {

namespace {

class JvmControl final : public core::ControlTarget {
public:
    explicit JvmControl(DetachFunction detach) : detach_(std::move(detach)) {}

    std::string Detach(core::Core &core, std::vector<std::string> &notes) noexcept override {
        try {
            return detach_(core, notes);
        } catch (const std::exception &e) {
            return e.what();
        }
    }

    // A daemon thread the JVM knows (its own ThreadStart is Martini's work, not the
    // program's: not delivered).
    void ReaderStarted() noexcept override {
        core::OwnWorkScope own;
        JavaVMAttachArgs args{JNI_VERSION_1_8, const_cast<char *>("Martini control"), nullptr};
        JNIEnv *jni = nullptr;
        attached_ = Vm::Java()->AttachCurrentThreadAsDaemon(reinterpret_cast<void **>(&jni), &args) == JNI_OK;
        if (!attached_) core::LogLine("control: the JVM did not take the control thread; commands that need it may fail");
    }
    void ReaderEnding() noexcept override {
        core::OwnWorkScope own;
        if (attached_) Vm::Java()->DetachCurrentThread();
    }

private:
    DetachFunction detach_;
    bool attached_ = false;
};

// Never destroyed: the JVM may end the process while the reader still runs.
core::ControlChannel *gChannel = nullptr;
JvmControl *gTarget = nullptr;

}  // namespace

void StartControl(core::Core &core, DetachFunction detach) {
    StopControl();
    gTarget = new JvmControl(std::move(detach));  // one per attach: a few bytes
    gChannel = new core::ControlChannel();
    if (const std::string e = gChannel->Start(core, gTarget); !e.empty()) {
        core::LogLine(e + "; `martini control` will not reach this JVM");
    }
}

void StopControl() {
    if (gChannel != nullptr) gChannel->Stop();
}

}  // namespace martini::jvm
