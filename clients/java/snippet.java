import snowmint.Decoder;
import snowmint.SnowmintClient;

class Snippet {
    public static void main(String[] args) throws Exception {
        String url = System.getenv().getOrDefault("SNOWMINT_URL", "http://127.0.0.1:8080");
        long id = new SnowmintClient(url).nextId();
        System.out.println(Decoder.decode(id, "twitter"));
    }
}
