// The MPI document's client filters on a class named Foo (public methods): 1 + 100 calls.
public class Foo
{
    public static int Run(int i) { return i * 2; }

    public static int Main()
    {
        int s = 0;
        for (int i = 0; i < 100; i++) s += Run(i);
        return s == 9900 ? 0 : 1;
    }
}
