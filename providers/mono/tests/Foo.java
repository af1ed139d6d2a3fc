// The MPI document's client filters on a class named Foo (public methods): 1 + 100 calls.
public class Foo {
    public static int run(int i) { return i * 2; }

    public static void main(String[] args) {
        int s = 0;
        for (int i = 0; i < 100; i++) s += run(i);
        if (s != 9900) System.exit(1);
    }
}
