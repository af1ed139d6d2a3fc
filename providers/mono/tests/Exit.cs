// Ends the process from inside nested frames: "exit" through Environment.Exit (Mono
// raises its shutdown events with these frames still open), "throw" through an
// unhandled exception (Mono raises no shutdown event at all).
using System;

namespace Ending
{
    static class Program
    {
        static void Deep(int n, string how)
        {
            if (n > 1) { Deep(n - 1, how); return; }
            if (how == "exit") Environment.Exit(3);
            throw new InvalidOperationException("unhandled on purpose");
        }

        static int Main(string[] args)
        {
            Deep(4, args.Length > 0 ? args[0] : "exit");
            return 0;
        }
    }
}
