// Loads Gone (from the directory given) through a class loader of its own, runs it,
// drops the loader and collects until the class is unloaded: its coverage counts
// must outlive it.
import java.io.File;
import java.lang.ref.WeakReference;
import java.net.URL;
import java.net.URLClassLoader;

public class Unload {
    public static void main(String[] args) throws Exception {
        URL[] where = {new File(args[0]).toURI().toURL()};
        URLClassLoader loader = new URLClassLoader(where, null);
        Object sum = loader.loadClass("Gone").getMethod("run", int.class).invoke(null, 7);
        WeakReference<ClassLoader> gone = new WeakReference<>(loader);
        loader.close();
        loader = null;
        for (int i = 0; i < 50 && gone.get() != null; i++) {
            System.gc();
            Thread.sleep(20);
        }
        System.out.println("sum " + sum + (gone.get() == null ? ", loader collected" : ", loader still alive"));
    }
}
