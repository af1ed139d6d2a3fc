// The exact-allocation benchmark's program (bench/jvm_alloc_overhead.sh): 2 million
// objects of one class, made three calls deep, most of them garbage at once.
public class AllocHeavy {
    static final int N = 2_000_000;

    static final class Item {
        final int value;
        Item(int value) { this.value = value; }
    }

    static Item make(int i) { return new Item(i); }
    static Item viaOne(int i) { return make(i); }
    static Item viaTwo(int i) { return viaOne(i); }

    public static void main(String[] args) {
        long sum = 0;
        Item[] kept = new Item[1000];
        for (int i = 0; i < N; ++i) {
            Item it = viaTwo(i);
            sum += it.value;
            kept[i % kept.length] = it;
        }
        System.out.println("sum " + sum + " kept " + kept.length);
    }
}
