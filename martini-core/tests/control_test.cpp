// The control channel's FIFO: made at Start, gone at Stop, and the FIFOs that ended
// processes of the same user left behind (SIGKILL) are removed at the next Start.
#include "martini/core/control.h"
#include "test_support.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace martini::test {
namespace {

bool Exists(const std::string &path) {
    struct stat st;
    return ::lstat(path.c_str(), &st) == 0;
}

pid_t EndedPid() {
    const pid_t child = ::fork();
    if (child == 0) ::_exit(0);
    ::waitpid(child, nullptr, 0);
    return child;
}

TEST(Control, FifosLeftByEndedProcessesAreRemovedAtStart) {
    const std::string stale = core::ControlFifoPath(EndedPid());
    ASSERT_TRUE(Exists(stale) || ::mkfifo(stale.c_str(), 0600) == 0);
    const std::string living = core::ControlFifoPath(::getppid());  // a process that runs: kept
    const bool madeLiving = !Exists(living) && ::mkfifo(living.c_str(), 0600) == 0;

    FakeProvider provider;
    Core core(provider);
    core.FinishInit();
    core::ControlChannel channel;
    ASSERT_EQ(channel.Start(core, nullptr), "");
    const std::string own = core::ControlFifoPath(::getpid());
    EXPECT_TRUE(Exists(own));
    EXPECT_FALSE(Exists(stale));
    if (madeLiving) {
        EXPECT_TRUE(Exists(living));
        ::unlink(living.c_str());
    }
    channel.Stop();
    EXPECT_FALSE(Exists(own));
}

}  // namespace
}  // namespace martini::test
