// The Mono sampling test's program: Burn keeps the main thread busy for a given amount of
// its own CPU time (read from the thread's CPU clock, whatever else the machine does)
// while a second thread sleeps; prints "BURN_CPU_NS <ns used in Burn>".
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

        static int Main(string[] args)
        {
            long ms = args.Length > 0 ? long.Parse(args[0]) : 1200;
            var sleeper = new Thread(() => Thread.Sleep((int)ms));
            sleeper.Start();
            long before = ThreadCpuNs();
            double sum = Burn(ms * 1000000L);
            long used = ThreadCpuNs() - before;
            sleeper.Join();
            Console.WriteLine("BURN_CPU_NS {0}", sum > 0 ? used : 0);
            return 0;
        }
    }
}
