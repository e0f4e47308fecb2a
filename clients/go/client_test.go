package snowmint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// serverURL is the running `snowmint serve --datacenter 1 --worker 7` the tests ask.
func serverURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv("SNOWMINT_URL")
	if u == "" {
		t.Fatal("SNOWMINT_URL is not set: run test.sh, or start `snowmint serve --datacenter 1 --worker 7` and set it to its address")
	}
	return u
}

// fromTheServer checks that ids strictly increase and decode to the server's datacenter
// and worker, at about the present time.
func fromTheServer(t *testing.T, ids []uint64) {
	t.Helper()
	for i, id := range ids {
		if i > 0 && ids[i-1] >= id {
			t.Fatalf("ids increase: %d then %d", ids[i-1], id)
		}
		d, err := Decode(id, "twitter")
		if err != nil {
			t.Fatal(err)
		}
		if d.Datacenter != 1 || d.Worker != 7 {
			t.Fatalf("%v: want datacenter 1, worker 7", d)
		}
		if age := time.Since(d.Time()); age > 24*time.Hour || age < -24*time.Hour {
			t.Fatalf("%v: its time is not within a day of now", d)
		}
	}
}

// seen is one request as it reached a gateProxy.
type seen struct {
	number        int
	pathAndQuery  string
	authorization string
}

// gateProxy is a loopback proxy in front of the real server that counts the requests,
// records what they asked and carried, and holds the requests from a given number on until
// released: the tests see when a client fetches, and what it does while a fetch is under
// way.
type gateProxy struct {
	*httptest.Server
	mu       sync.Mutex
	seen     []seen
	arrivals chan seen
	release  chan struct{}
	once     sync.Once
}

func newGateProxy(t *testing.T, target string, holdFrom int) *gateProxy {
	p := &gateProxy{arrivals: make(chan seen, 100), release: make(chan struct{})}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		s := seen{len(p.seen) + 1, r.URL.RequestURI(), r.Header.Get("Authorization")}
		p.seen = append(p.seen, s)
		p.mu.Unlock()
		select {
		case p.arrivals <- s:
		default: // no test waits for this many
		}
		if s.number >= holdFrom {
			<-p.release
		}
		req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, strings.TrimSuffix(target, "/")+s.pathAndQuery, nil)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		if s.authorization != "" {
			req.Header.Set("Authorization", s.authorization)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	t.Cleanup(func() {
		p.open()
		p.Close()
	})
	return p
}

// open lets the held requests, and all later ones, through.
func (p *gateProxy) open() {
	p.once.Do(func() { close(p.release) })
}

func (p *gateProxy) requests() []seen {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]seen(nil), p.seen...)
}

func (p *gateProxy) asked() []string {
	var paths []string
	for _, s := range p.requests() {
		paths = append(paths, s.pathAndQuery)
	}
	return paths
}

// arrival is the next request to reach the proxy, waited for up to 10 s.
func (p *gateProxy) arrival(t *testing.T) seen {
	t.Helper()
	select {
	case s := <-p.arrivals:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("no request reached the proxy within 10 s")
		return seen{}
	}
}

func nextIDs(t *testing.T, c *Client, n int) []uint64 {
	t.Helper()
	ids := make([]uint64, n)
	for i := range ids {
		id, err := c.NextID(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	return ids
}

func TestOneIDAtATimeComesFromTheServersWorker(t *testing.T) {
	c := &Client{BaseURL: serverURL(t)}
	fromTheServer(t, nextIDs(t, c, 250))
}

func TestABatchComesFromTheServersWorker(t *testing.T) {
	c := &Client{BaseURL: serverURL(t)}
	ctx := context.Background()
	ids, err := c.NextIDs(ctx, 1000)
	if err != nil || len(ids) != 1000 {
		t.Fatalf("%d ids, %v", len(ids), err)
	}
	fromTheServer(t, ids)
	if none, err := c.NextIDs(ctx, 0); err != nil || len(none) != 0 {
		t.Errorf("ids for 0: %v, %v", none, err)
	}
	// More than one request takes.
	many, err := c.NextIDs(ctx, MaxCount+5)
	if err != nil || len(many) != MaxCount+5 {
		t.Fatalf("%d ids, %v", len(many), err)
	}
	fromTheServer(t, append(ids, many...))
}

func TestABatchHandsOutTheBufferedIDsFirst(t *testing.T) {
	p := newGateProxy(t, serverURL(t), 1<<30)
	c := &Client{BaseURL: p.URL, BatchSize: 10, RefillBelow: 1}
	first := nextIDs(t, c, 1)
	if c.Buffered() != 9 {
		t.Errorf("buffered after one id: %d", c.Buffered())
	}
	ids, err := c.NextIDs(context.Background(), 25)
	if err != nil {
		t.Fatal(err)
	}
	fromTheServer(t, append(first, ids...))
	if got, want := fmt.Sprint(p.asked()), "[/v1/ids?count=10 /v1/ids?count=16]"; got != want {
		t.Errorf("requests %s, want %s", got, want)
	}
}

// TestTheBufferIsRefilledBeforeItRunsDry holds the second request at the proxy: the client
// hands out its remaining buffered ids while it is under way, so it was sent before the
// buffer ran dry.
func TestTheBufferIsRefilledBeforeItRunsDry(t *testing.T) {
	p := newGateProxy(t, serverURL(t), 2)
	c := &Client{BaseURL: p.URL, BatchSize: 10, RefillBelow: 4}
	ids := nextIDs(t, c, 6)
	if n := len(p.requests()); n != 1 {
		t.Errorf("requests while 4 ids are left: %d", n)
	}
	ids = append(ids, nextIDs(t, c, 1)...) // leaves 3, under 4: the refill goes out
	for _, what := range []string{"the first fill", "the refill"} {
		if s := p.arrival(t); s.pathAndQuery != "/v1/ids?count=10" {
			t.Errorf("%s asked %s", what, s.pathAndQuery)
		}
	}
	ids = append(ids, nextIDs(t, c, 3)...) // from the buffer, while the refill is held
	if c.Buffered() != 0 {
		t.Errorf("buffered once the first batch is handed out: %d", c.Buffered())
	}
	if n := len(p.requests()); n != 2 {
		t.Errorf("requests with a refill under way: %d, want 2 (one refill at a time)", n)
	}
	p.open()
	ids = append(ids, nextIDs(t, c, 1)...)
	fromTheServer(t, ids)
	if n, b := len(p.requests()), c.Buffered(); n != 2 || b != 9 {
		t.Errorf("after the refill arrived: %d requests and %d buffered, want 2 and 9", n, b)
	}
}

func TestABatchSizeOf1AsksV1IDEachTime(t *testing.T) {
	p := newGateProxy(t, serverURL(t), 1<<30)
	c := &Client{BaseURL: p.URL, BatchSize: 1}
	ids := nextIDs(t, c, 2)
	one, err := c.NextIDs(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	fromTheServer(t, append(ids, one...))
	if got, want := fmt.Sprint(p.asked()), "[/v1/id /v1/id /v1/id]"; got != want {
		t.Errorf("requests %s, want %s", got, want)
	}
}

func TestTheTokenGoesAsABearerHeader(t *testing.T) {
	p := newGateProxy(t, serverURL(t), 1<<30)
	ctx := context.Background()
	if _, err := (&Client{BaseURL: p.URL, Token: "s3cret"}).NextIDs(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := (&Client{BaseURL: p.URL}).NextIDs(ctx, 3); err != nil {
		t.Fatal(err)
	}
	seen := p.requests()
	if seen[0].authorization != "Bearer s3cret" || seen[1].authorization != "" {
		t.Errorf("authorization with and without a token: %q, %q", seen[0].authorization, seen[1].authorization)
	}
}

func TestGoroutinesSharingAClientGetDistinctIDs(t *testing.T) {
	c := &Client{BaseURL: serverURL(t), BatchSize: 50}
	results := make([][]uint64, 4)
	var wg sync.WaitGroup
	for g := range results {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				id, err := c.NextID(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				results[g] = append(results[g], id)
			}
		}(g)
	}
	wg.Wait()
	all := map[uint64]bool{}
	for _, ids := range results {
		fromTheServer(t, ids) // each goroutine's ids increase too
		for _, id := range ids {
			all[id] = true
		}
	}
	if len(all) != 2000 {
		t.Errorf("%d distinct ids, want 2000", len(all))
	}
}

func TestAServerErrorNamesTheRequestTheStatusAndTheServersText(t *testing.T) {
	base := strings.TrimSuffix(serverURL(t), "/") + "/nope"
	_, err := (&Client{BaseURL: base}).NextID(context.Background())
	errorIs(t, err, "GET "+base+"/v1/ids?count=100 answered 404: no route for GET /nope/v1/ids")
	var serr *ServerError
	if !errors.As(err, &serr) || serr.Status != 404 || serr.Message != "no route for GET /nope/v1/ids" {
		t.Errorf("a *ServerError with the status and the server's text: %#v", err)
	}
}

func TestTheOldNameOfTheServerErrorStillFindsOne(t *testing.T) {
	base := strings.TrimSuffix(serverURL(t), "/") + "/nope"
	_, err := (&Client{BaseURL: base}).NextIDs(context.Background(), 3)
	// HTTPError is a deprecated alias of ServerError: code written against it still works.
	var herr *HTTPError
	if !errors.As(err, &herr) || herr.URL != base+"/v1/ids?count=3" || herr.Status != 404 || herr.Message != "no route for GET /nope/v1/ids" {
		t.Errorf("an *HTTPError with the request, the status and the server's text: %#v", err)
	}
	if _, ok := err.(*ServerError); !ok {
		t.Errorf("the error is a *ServerError: %T", err)
	}
}

// closedPort is a loopback port nothing listens on: bound, then closed.
func closedPort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func TestAnUnreachableServerIsAnErrorNotAHang(t *testing.T) {
	u := fmt.Sprintf("http://127.0.0.1:%d", closedPort(t))
	c := &Client{BaseURL: u, Timeout: 2 * time.Second}
	_, err := c.NextID(context.Background())
	errorIs(t, err, fmt.Sprintf("GET %s/v1/ids?count=100 failed: dial tcp 127.0.0.1:%s: connect: connection refused", u, u[len("http://127.0.0.1:"):]))
	var cerr *ConnectionError
	if !errors.As(err, &cerr) || cerr.URL != u+"/v1/ids?count=100" {
		t.Errorf("a *ConnectionError with the request's address: %#v", err)
	}
	_, err = c.NextIDs(context.Background(), 5)
	if err == nil || !strings.HasPrefix(err.Error(), "GET "+u+"/v1/ids?count=5 failed: ") {
		t.Errorf("error %v", err)
	}
	// A count no memory holds is asked for, one request at a time, not allocated up front.
	_, err = c.NextIDs(context.Background(), math.MaxInt)
	if err == nil || !strings.HasPrefix(err.Error(), "GET "+u+"/v1/ids?count=100000 failed: ") {
		t.Errorf("error %v", err)
	}
}

// TestASilentServerTimesOut listens and never answers: the connection opens, no reply comes.
func TestASilentServerTimesOut(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	u := "http://" + l.Addr().String()
	_, err = (&Client{BaseURL: u, Timeout: 300 * time.Millisecond}).NextID(context.Background())
	if err == nil || !strings.HasPrefix(err.Error(), "GET "+u+"/v1/ids?count=100 timed out after 300 ms") {
		t.Errorf("error %v", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("%v is not context.DeadlineExceeded", err)
	}
	var cerr *ConnectionError
	if !errors.As(err, &cerr) {
		t.Errorf("%v is no *ConnectionError", err)
	}
}

func TestACancelledContextStopsTheRequest(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = (&Client{BaseURL: "http://" + l.Addr().String()}).NextID(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
}

func TestBadSettingsAreRefused(t *testing.T) {
	u := serverURL(t)
	ctx := context.Background()
	for _, c := range []struct {
		client *Client
		want   string
	}{
		{&Client{BaseURL: u, BatchSize: -1}, "batch size -1 is out of range 1..=100000"},
		{&Client{BaseURL: u, BatchSize: 100001}, "batch size 100001 is out of range 1..=100000"},
		{&Client{BaseURL: u, BatchSize: 10, RefillBelow: 11}, "refill threshold 11 is out of range 0..=10 (the batch size)"},
		{&Client{BaseURL: u, RefillBelow: -1}, "refill threshold -1 is out of range 0..=100 (the batch size)"},
		{&Client{BaseURL: u, Timeout: -time.Second}, "timeout -1s must be positive"},
		{&Client{BaseURL: "ftp://127.0.0.1"}, `base url "ftp://127.0.0.1" is not an http or https url such as http://127.0.0.1:8080`},
		{&Client{BaseURL: "127.0.0.1:8080"}, `base url "127.0.0.1:8080" is not an http or https url such as http://127.0.0.1:8080`},
	} {
		_, err := c.client.NextID(ctx)
		errorIs(t, err, c.want)
	}
	_, err := (&Client{BaseURL: u}).NextIDs(ctx, -1)
	errorIs(t, err, "count -1 is out of range 0..=9223372036854775807")
}
