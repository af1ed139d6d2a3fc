// A C# program whose call counts are known: each method of the Counts namespace adds
// one to its own counter (a field increment or Interlocked.Increment, neither a call
// into this namespace), and at the end the program prints "EXPECT <calls> <method>"
// per method. The Mono provider's tests compare these with what callcount reports.
// Covered: generics (a value-type and a reference-type instantiation), virtual and
// interface calls, a static constructor, exceptions through 10 frames on 5 threads,
// finally blocks, delegates and lambdas, recursion.
using System;
using System.Collections.Generic;
using System.Threading;

namespace Counts
{
    interface IShape { int Area(); }

    abstract class Shape : IShape
    {
        public static int nBase;
        protected Shape() { Interlocked.Increment(ref nBase); }
        public abstract int Area();
    }

    sealed class Square : Shape
    {
        public static int nArea, nCtor;
        readonly int side;
        public Square(int s) : base() { Interlocked.Increment(ref nCtor); side = s; }
        public override int Area() { Interlocked.Increment(ref nArea); return side * side; }
    }

    sealed class Circle : Shape
    {
        public static int nArea, nCtor;
        readonly int r;
        public Circle(int r) : base() { Interlocked.Increment(ref nCtor); this.r = r; }
        public override int Area() { Interlocked.Increment(ref nArea); return 3 * r * r; }
    }

    class Box<T>
    {
        public static int nGet, nCtor;
        readonly T value;
        public Box(T v) { Interlocked.Increment(ref nCtor); value = v; }
        public T Get() { Interlocked.Increment(ref nGet); return value; }
    }

    static class Config
    {
        public static int nCctor, nLimit;
        public static readonly int Max;
        static Config() { nCctor++; Max = 7; }
        public static int Limit() { Interlocked.Increment(ref nLimit); return Max; }
    }

    static class Thrower
    {
        public static int nDive, nFinally, nCatch, nRun;
        // Depth 10: Dive(10) .. Dive(1), the innermost throws.
        public static int Dive(int depth)
        {
            Interlocked.Increment(ref nDive);
            try {
                if (depth == 1) throw new InvalidOperationException("bottom");
                return Dive(depth - 1) + 1;
            } finally {
                Interlocked.Increment(ref nFinally);
            }
        }
        public static void Run()
        {
            Interlocked.Increment(ref nRun);
            for (int i = 0; i < 20; i++) {
                try { Dive(10); } catch (InvalidOperationException) { Interlocked.Increment(ref nCatch); }
            }
        }
    }

    static class Program
    {
        public static int nMain, nFib, nApply, nLambda, nSum;

        static int Fib(int n)
        {
            nFib++;
            return n < 2 ? n : Fib(n - 1) + Fib(n - 2);
        }

        static int Apply(Func<int, int> f, int x) { nApply++; return f(x); }

        static int Sum(IShape[] shapes)
        {
            nSum++;
            int s = 0;
            foreach (IShape sh in shapes) s += sh.Area();  // interface calls
            return s;
        }

        static void Expect(int n, string method) { Console.WriteLine("EXPECT " + n + " " + method); }

        static int Main(string[] args)
        {
            nMain++;
            int fib = Fib(20);  // 21,891 calls
            int offset = Config.Limit();
            int acc = 0;
            for (int i = 0; i < 1000; i++) acc += Apply(x => { nLambda++; return x + offset; }, i);
            var shapes = new List<IShape>();
            for (int i = 0; i < 50; i++) shapes.Add(i % 2 == 0 ? (IShape)new Square(i) : new Circle(i));
            int total = 0;
            for (int i = 0; i < 10; i++) total += Sum(shapes.ToArray());
            Shape first = (Shape)shapes[0];
            for (int i = 0; i < 100; i++) total += first.Area();  // virtual calls
            var ints = new Box<int>(5);
            var strs = new Box<string>("s");
            for (int i = 0; i < 300; i++) { total += ints.Get(); total += strs.Get().Length; }
            var threads = new Thread[5];
            for (int t = 0; t < 5; t++) { threads[t] = new Thread(Thrower.Run); threads[t].Name = "thrower-" + t; threads[t].Start(); }
            foreach (var t in threads) t.Join();
            Console.WriteLine("result " + fib + " " + acc + " " + total);

            Expect(nMain, "Counts.Program.Main");
            Expect(nFib, "Counts.Program.Fib");
            Expect(nApply, "Counts.Program.Apply");
            Expect(nLambda, "Counts.Program+<Main>c__AnonStorey0.<>m__0");
            Expect(nSum, "Counts.Program.Sum");
            Expect(Square.nArea, "Counts.Square.Area");
            Expect(Circle.nArea, "Counts.Circle.Area");
            Expect(Square.nCtor, "Counts.Square..ctor");
            Expect(Circle.nCtor, "Counts.Circle..ctor");
            Expect(Shape.nBase, "Counts.Shape..ctor");
            Expect(Box<int>.nGet + Box<string>.nGet, "Counts.Box`1.Get");
            Expect(Box<int>.nCtor + Box<string>.nCtor, "Counts.Box`1..ctor");
            Expect(Config.nCctor, "Counts.Config..cctor");
            Expect(Config.nLimit, "Counts.Config.Limit");
            Expect(Thrower.nDive, "Counts.Thrower.Dive");
            Expect(Thrower.nRun, "Counts.Thrower.Run");
            Console.WriteLine("EXCEPTIONAL " + (Thrower.nCatch * 10) + " Counts.Thrower.Dive");
            Console.WriteLine("FINALLY " + Thrower.nFinally);
            return 0;
        }
    }
}
