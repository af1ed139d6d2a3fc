// Mono's twin of Phases.java: First() for `ms` milliseconds, nearly all of it on the
// line marked HOT.
using System;
using System.Diagnostics;

static class Phases
{
    static long sink;

    static long First(long n)
    {
        long x = 1;
        for (long i = 0; i < n; i++)
        {
            x = (x ^ (x >> 7)) * 0x5851F42D4C957F2DL + i % 7 + (x % 13); // HOT
        }
        x += n & 3; // COLD
        return x;
    }

    static void Main(string[] args)
    {
        long ms = args.Length > 0 ? long.Parse(args[0]) : 1000;
        var watch = Stopwatch.StartNew();
        while (watch.ElapsedMilliseconds < ms) sink += First(200000);
        Console.WriteLine("phases: " + (sink != 42 ? "done" : "?"));
    }
}
