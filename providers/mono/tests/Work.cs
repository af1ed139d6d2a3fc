// The Mono provider's event test program: allocations that survive collections (GcStart/
// GcEnd, moved references), a contended lock, a busy loop for the sampler, and a known
// call chain Main -> Middle -> Leaf for the shadow-stack call stack.
using System;
using System.Collections.Generic;
using System.Threading;

namespace Work
{
    sealed class Node
    {
        public Node Next;
        public readonly int Value;
        public Node(int v) { Value = v; }
    }

    static class Program
    {
        static readonly object gate = new object();
        static int shared;

        static int Leaf(int x) { return x + 1; }
        static int Middle(int x) { return Leaf(x) * 2; }

        static double Spin(int ms)
        {
            var until = DateTime.UtcNow.AddMilliseconds(ms);
            double s = 0;
            while (DateTime.UtcNow < until) for (int i = 0; i < 10000; i++) s += Math.Sqrt(i);
            return s;
        }

        static void Contend()
        {
            for (int i = 0; i < 20; i++) {
                lock (gate) { shared++; Thread.Sleep(2); }
            }
        }

        static int Main()
        {
            var kept = new List<Node>();
            Node head = null;
            for (int i = 0; i < 100000; i++) {
                var n = new Node(i) { Next = head };
                if (i % 10 == 0) kept.Add(n); else head = n;
                if (i % 1000 == 0) head = null;
            }
            GC.Collect();
            var a = new Thread(Contend);
            var b = new Thread(Contend);
            a.Start(); b.Start(); a.Join(); b.Join();
            double s = Spin(400);
            int m = Middle(1);
            Console.WriteLine("work " + kept.Count + " " + shared + " " + (s > 0) + " " + m);
            return 0;
        }
    }
}
