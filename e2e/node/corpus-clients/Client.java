// java Client.java URL [SECONDS] — the corpus's Java client (java.net.http.HttpClient, run by the JRE's
// source launcher: no JDK needed). GET URL and print the body; with SECONDS, sleep that long and GET
// again with a new HttpClient (a new connection), so an address the JVM cached past the sidecar's
// binding TTL is used again. Exit 1 on any failure.
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

public class Client {
    static String get(String url) throws Exception {
        HttpClient c = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(15)).build();
        HttpResponse<String> r = c.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(20)).build(),
                HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 200) throw new Exception("status " + r.statusCode());
        return r.body().trim();
    }

    public static void main(String[] a) {
        try {
            System.out.println(get(a[0]));
            if (a.length > 1) {
                Thread.sleep(Long.parseLong(a[1]) * 1000);
                System.out.println(get(a[0]));
            }
        } catch (Exception e) {
            System.err.println("Client: " + e);
            System.exit(1);
        }
    }
}
