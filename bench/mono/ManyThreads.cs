// Starts N short-lived threads (default 2,000), 100 alive at a time, each making a few
// calls: the Mono cases of bench/reliability.py (every thread's calls counted, the
// profile complete, the peak memory said).
using System;
using System.Threading;

static class ManyThreads
{
    static long sink;

    static long Work(int i)
    {
        long s = 0;
        for (int k = 0; k < 10; k++) s += Step(i, k);
        return s;
    }

    static long Step(int i, int k) { return (long)i * k; }

    static void Main(string[] args)
    {
        int n = args.Length > 0 ? int.Parse(args[0]) : 2000;
        var batch = new Thread[100];
        for (int started = 0; started < n; started += batch.Length) {
            for (int j = 0; j < batch.Length; j++) {
                int i = started + j;
                batch[j] = new Thread(() => Interlocked.Add(ref sink, Work(i)));
                batch[j].Name = "worker-" + i;
                batch[j].Start();
            }
            foreach (var t in batch) t.Join();
        }
        Console.WriteLine("threads started: " + n);
    }
}
