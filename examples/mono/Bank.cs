// The bundled C# example: four tellers (threads) apply 200 transfers to one ledger (a
// contended lock), each transfer an object; a generic journal keeps them; every tenth
// transfer is refused by an exception thrown three frames down and caught by the
// teller. Profile it with: martini run --client cgprof -- mono Bank.exe
using System;
using System.Collections.Generic;
using System.Threading;

namespace Bank
{
    sealed class Transfer
    {
        public readonly int From, To;
        public readonly long Amount;
        public Transfer(int from, int to, long amount) { From = from; To = to; Amount = amount; }
    }

    sealed class RefusedException : Exception
    {
        public RefusedException(string why) : base(why) { }
    }

    sealed class Journal<T>
    {
        readonly List<T> entries = new List<T>();
        public void Add(T entry) { lock (entries) entries.Add(entry); }
        public int Count { get { lock (entries) return entries.Count; } }
    }

    sealed class Ledger
    {
        readonly long[] balances = new long[16];
        public int Refused;

        public void Apply(Transfer t)
        {
            lock (this) {
                Check(t);
                balances[t.From] -= t.Amount;
                balances[t.To] += t.Amount;
                Thread.SpinWait(20000);  // long enough for the other tellers to queue
            }
        }

        void Check(Transfer t) { Limit(t, 1); }

        void Limit(Transfer t, int depth)
        {
            if (t.Amount % 10 == 0) throw new RefusedException("amount " + t.Amount + " refused");
        }

        public long Total()
        {
            long s = 0;
            foreach (long b in balances) s += b;
            return s;
        }
    }

    static class Program
    {
        static readonly Ledger ledger = new Ledger();
        static readonly Journal<Transfer> journal = new Journal<Transfer>();

        static void Teller(int id)
        {
            for (int i = 0; i < 50; i++) {
                var t = new Transfer((id + i) % 16, (id * 7 + i) % 16, id * 50 + i + 1);
                try {
                    ledger.Apply(t);
                    journal.Add(t);
                } catch (RefusedException) {
                    Interlocked.Increment(ref ledger.Refused);
                }
            }
        }

        static int Main()
        {
            var tellers = new Thread[4];
            for (int i = 0; i < tellers.Length; i++) {
                int id = i;
                tellers[i] = new Thread(() => Teller(id)) { Name = "teller-" + i };
                tellers[i].Start();
            }
            foreach (var t in tellers) t.Join();
            Console.WriteLine("bank: 200 transfers, " + journal.Count + " booked, " + ledger.Refused +
                              " refused, total " + ledger.Total());
            return ledger.Total() == 0 && journal.Count + ledger.Refused == 200 ? 0 : 1;
        }
    }
}
