// The Mono provider's event test program: allocations that survive collections (GcStart/
// GcEnd, moved references), a contended lock, a busy loop for the sampler, and a known
// call chain Main -> Middle -> Leaf for the shadow-stack call stack, a wait woken by a
// pulse and a wait that times out, threads started and joined.
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
        static readonly object mailbox = new object();
        static volatile bool ready;
        static bool posted;
        static int shared;

        static void Waiter()
        {
            lock (mailbox) {
                ready = true;
                while (!posted) Monitor.Wait(mailbox);
            }
        }

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
            // One wait woken by a pulse (the waiter holds the mailbox until it waits),
            // one that times out.
            var w = new Thread(Waiter);
            w.Start();
            while (!ready) Thread.Sleep(1);
            lock (mailbox) { posted = true; Monitor.Pulse(mailbox); }
            w.Join();
            lock (mailbox) { Monitor.Wait(mailbox, 10); }
            double s = Spin(1000);
            int m = Middle(1);
            Console.WriteLine("work " + kept.Count + " " + shared + " " + (s > 0) + " " + m);
            return 0;
        }
    }
}
