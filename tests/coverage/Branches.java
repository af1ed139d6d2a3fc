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
            sum += pick(i) + spin(i % 4) + both(i % 5 - 2, i % 7 - 3) + kind(i) + fall(i) + through(i);
        System.out.println(sum);
    }
    static int kind(int i) {
        switch (i % 5) {
            case 0: return 10;
            case 1:
            case 2: return 20;
            case 3: break;
            default: return 40;
        }
        return 30;
    }
    static int fall(int i) {
        int r = 0;
        switch (i % 4) {
            case 0: r += 1; break;
            case 2: r += 4; break;
        }
        return r;
    }
    static int through(int i) {
        int r = 0;
        switch (i % 3) {
            case 0: r += 1;
            case 1: r += 2;
        }
        return r;
    }
}
