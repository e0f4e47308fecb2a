import snowmint.Client;
import snowmint.Decoder;

class Snippet {
    public static void main(String[] args) throws Exception {
        String url = System.getenv().getOrDefault("SNOWMINT_URL", "http://127.0.0.1:8080");
        long id = new Client(url).nextId();
        System.out.println(Decoder.decode(id, "twitter"));
    }
}
