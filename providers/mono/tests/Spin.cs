// Runs until a signal ends it: prints "ready" once Step has run 1000 times, then calls
// Step for ever (a server that runs until it is stopped).
using System;

namespace Spinning
{
    static class Program
    {
        static long total;

        static void Step(int i) { total += i; }

        static int Main()
        {
            for (int i = 0; i < 1000; ++i) Step(i);
            Console.WriteLine("ready");
            Console.Out.Flush();
            for (int i = 0; ; ++i) {
                Step(i);
                if (total == -1) break;
            }
            return 0;
        }
    }
}
