public class Branches {
    static int spin(int n) {
        while (n > 0)
            n--;
        return n;
    }
    static int pick(int i) {
        if (i % 3 == 0)
            return 1;
        else if (i % 3 == 1)
            return 2;
        return 3;
    }
    static int both(int a, int b) {
        if (a > 0 && b > 0)
            return a + b;
        return a > b ? a : b;
    }
    public static void main(String[] args) {
        int sum = 0;
        for (int i = 0; i < 30; i++)
            sum += pick(i) + spin(i % 4) + both(i % 5 - 2, i % 7 - 3);
        System.out.println(sum);
    }
}
