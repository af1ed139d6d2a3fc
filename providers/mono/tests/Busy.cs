// The Mono sampling test's program: Burn keeps the main thread busy for a given amount of
// its own CPU time (read from the thread's CPU clock, whatever else the machine does),
// and a thread started by the program (which raises no other event) through BurnOnThread
// for the same time, while a third thread sleeps. Prints "BURN_CPU_NS <main's ns in
// Burn> <the started thread's ns in Burn>".
using System;
using System.Runtime.InteropServices;
using System.Threading;

namespace Busy
{
    static class Program
    {
        [StructLayout(LayoutKind.Sequential)]
        struct Timespec { public long Sec; public long Nsec; }

        [DllImport("libc")]
        static extern int clock_gettime(int clock, out Timespec ts);

        const int ClockThreadCputimeId = 3;

        static long ThreadCpuNs()
        {
            Timespec t;
            clock_gettime(ClockThreadCputimeId, out t);
            return t.Sec * 1000000000L + t.Nsec;
        }

        static double Burn(long ns)
        {
            long until = ThreadCpuNs() + ns;
            double s = 0;
            while (ThreadCpuNs() < until) for (int i = 0; i < 1000; i++) s += Math.Sqrt(i);
            return s;
        }

        static long threadUsed;

        static void BurnOnThread(long ns)
        {
            long before = ThreadCpuNs();
            Burn(ns);
            threadUsed = ThreadCpuNs() - before;
        }

        static int Main(string[] args)
        {
            long ms = args.Length > 0 ? long.Parse(args[0]) : 1200;
            var sleeper = new Thread(() => Thread.Sleep((int)ms));
            var burner = new Thread(() => BurnOnThread(ms * 1000000L));
            sleeper.Start();
            burner.Start();
            long before = ThreadCpuNs();
            double sum = Burn(ms * 1000000L);
            long used = ThreadCpuNs() - before;
            sleeper.Join();
            burner.Join();
            Console.WriteLine("BURN_CPU_NS {0} {1}", sum > 0 ? used : 0, threadUsed);
            return 0;
        }
    }
}
