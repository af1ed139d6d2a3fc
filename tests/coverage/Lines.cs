// Coverage on Mono (tests/coverage_mono_test.py): one statement per line, so that
// each line's count is known. With an argument, it waits (for a signal) after the work.
using System;
using System.Threading;

class Lines
{
    static int total;

    static int Square(int x)
    {
        return x * x;
    }

    static void Classify(int i)
    {
        if (i % 3 == 0)
        {
            total += 1;
        }
        else
        {
            total += 2;
        }
    }

    static void Fail(int i)
    {
        total += i;
        throw new InvalidOperationException("no");
    }

    static int Clamp(int v)
    {
        return Math.Max(v, 0) + Math.Abs(v);
    }

    static void Never()
    {
        total = -1;
    }

    static int Rare(int x)
    {
        return x + 1;
    }

    static void Main(string[] args)
    {
        for (int i = 0; i < 10; i++)
        {
            total += Square(i);
        }
        for (int i = 0; i < 9; i++)
        {
            Classify(i);
        }
        for (int i = 0; i < 4; i++)
        {
            try
            {
                Fail(i);
            }
            catch (InvalidOperationException)
            {
                total -= 1;
            }
        }
        int n = 0;
        while (n < 5)
        {
            n = n + 1;
        }
        total += Clamp(-3);
        Console.WriteLine("lines: " + total);
        if (args.Length > 0)
        {
            total = Rare(total);
            Console.WriteLine("waiting");
            Thread.Sleep(60000);
        }
    }
}
