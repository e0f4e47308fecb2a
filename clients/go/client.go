package snowmint

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	// MaxCount is the most ids one request asks for: the server's default --max-batch.
	MaxCount = 100000
	// DefaultBatchSize is the ids a Client fetches at a time when BatchSize is 0.
	DefaultBatchSize = 100
	// DefaultTimeout bounds each request, connecting included, when Timeout is 0.
	DefaultTimeout = 5 * time.Second
	// maxBody bounds what a response body may take: 100000 ids of 20 digits and quotes.
	maxBody = 4 << 20
)

// Client gets ids from a snowmint serve over HTTP. Set its fields before its first use, as
// with net/http's Client; the zero values are the defaults. A Client is safe to share
// between goroutines.
//
// NextID hands out ids from a local buffer, filled with one GET /v1/ids?count=BatchSize.
// When a call leaves fewer than RefillBelow ids in it, the next batch is fetched in the
// background, so the buffer is refilled before it runs dry and a call waits on the network
// only when the ids run out faster than a batch arrives. NextIDs hands out the buffered ids
// first and fetches the rest. All the ids one Client hands out increase, since it has at
// most one request in flight and takes ids in the order the server issued them.
type Client struct {
	// BaseURL is the server's address, such as http://127.0.0.1:8080.
	BaseURL string
	// Token is the bearer token of a server started with --auth-token; empty sends none.
	Token string
	// Timeout bounds each request, connecting included (0: DefaultTimeout).
	Timeout time.Duration
	// BatchSize is the ids fetched at a time, 1..=MaxCount (0: DefaultBatchSize); 1
	// fetches each id with GET /v1/id.
	BatchSize int
	// RefillBelow fetches the next batch once fewer ids than this are left, 0..=BatchSize
	// (0: a quarter of BatchSize).
	RefillBelow int
	// HTTPClient sends the requests (nil: http.DefaultClient, or a client with the TLS
	// files below when one is named).
	HTTPClient *http.Client
	// CAFile is, for an https:// server, the PEM file of the CA that signs its certificate
	// (empty: the system's CAs).
	CAFile string
	// CertFile and KeyFile, together, are the PEM client certificate and its key, for a
	// server started with --tls-client-ca.
	CertFile string
	KeyFile  string

	mu     sync.Mutex
	set    *settings // checked from the fields on first use
	buffer []uint64  // fetched and not handed out yet, oldest first
	refill chan batch
}

type settings struct {
	base        string // ends with a slash
	timeout     time.Duration
	batchSize   int
	refillBelow int
	httpClient  *http.Client
}

// batch is what a fetch brings: ids or an error.
type batch struct {
	ids []uint64
	err error
}

// ServerError is a server's answer with an error status.
type ServerError struct {
	// URL is the request's address.
	URL string
	// Status is the HTTP status, such as 401.
	Status int
	// Message is the server's error text, or the start of its body when it sent no JSON
	// error.
	Message string
}

func (e *ServerError) Error() string {
	return fmt.Sprintf("GET %s answered %d: %s", e.URL, e.Status, e.Message)
}

// HTTPError is the old name of ServerError: the same type, so errors.As with an *HTTPError
// target still finds a server's error status.
//
// Deprecated: use ServerError, the name every snowmint client uses.
type HTTPError = ServerError

// ConnectionError is a request that got no answer: the server cannot be reached, did not
// answer within the timeout, or the context was done first. Err is the cause, which
// errors.Is and errors.As see (context.DeadlineExceeded, context.Canceled, a net error).
type ConnectionError struct {
	// URL is the request's address.
	URL string
	// Err is why the request got no answer.
	Err error
	msg string
}

func (e *ConnectionError) Error() string { return e.msg }

// Unwrap is the cause, for errors.Is and errors.As.
func (e *ConnectionError) Unwrap() error { return e.Err }

// NextID returns one id, from the local buffer. It fails with a *ServerError when the server
// answers with an error status, with a *ConnectionError when the server cannot be reached
// or does not answer within the timeout, and with an error naming the request when it
// answers something that is not ids.
func (c *Client) NextID(ctx context.Context) (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, err := c.settings()
	if err != nil {
		return 0, err
	}
	if c.refill != nil {
		select {
		case b := <-c.refill:
			c.refill = nil
			// A refill that failed is tried again below; its error reaches the caller
			// when the ids run out.
			c.buffer = append(c.buffer, b.ids...)
		default:
		}
	}
	if len(c.buffer) == 0 {
		var b batch
		if c.refill != nil {
			select {
			case b = <-c.refill:
				c.refill = nil
			case <-ctx.Done():
				return 0, ctx.Err()
			}
		} else {
			b.ids, b.err = c.fetch(ctx, s, s.batchSize)
		}
		if b.err != nil {
			return 0, b.err
		}
		c.buffer = append(c.buffer, b.ids...)
	}
	id := c.buffer[0]
	c.buffer = c.buffer[1:]
	if len(c.buffer) < s.refillBelow && c.refill == nil {
		done := make(chan batch, 1)
		c.refill = done
		go func() {
			var b batch
			b.ids, b.err = c.fetch(context.Background(), s, s.batchSize)
			done <- b
		}()
	}
	return id, nil
}

// NextIDs returns count ids in the order the server issued them: the buffered ones first,
// then fresh ones, in requests of at most MaxCount. It fails as NextID does, and when count
// is negative.
func (c *Client) NextIDs(ctx context.Context, count int) ([]uint64, error) {
	if count < 0 {
		return nil, fmt.Errorf("count %d is out of range 0..=%d", count, math.MaxInt)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s, err := c.settings()
	if err != nil {
		return nil, err
	}
	if c.refill != nil {
		// Its ids are older than any fetched now: they go first. If it failed, the ids are
		// fetched afresh below, where an error that lasts shows.
		select {
		case b := <-c.refill:
			c.refill = nil
			c.buffer = append(c.buffer, b.ids...)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	// Room for what one request brings; a count too large to hold fails on the network or
	// on memory as the ids arrive, not on the first allocation.
	ids := make([]uint64, 0, minInt(count, len(c.buffer)+MaxCount))
	n := count
	if n > len(c.buffer) {
		n = len(c.buffer)
	}
	ids = append(ids, c.buffer[:n]...)
	c.buffer = c.buffer[n:]
	for len(ids) < count {
		want := count - len(ids)
		if want > MaxCount {
			want = MaxCount
		}
		fresh, err := c.fetch(ctx, s, want)
		if err != nil {
			return nil, err
		}
		ids = append(ids, fresh...)
	}
	return ids, nil
}

func minInt(a, b int) int {
	if a < b {
		return a
	}
	return b
}

// Buffered is the number of ids in the local buffer now.
func (c *Client) Buffered() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.buffer)
}

// settings checks the fields once, on first use.
func (c *Client) settings() (*settings, error) {
	if c.set != nil {
		return c.set, nil
	}
	base, err := url.Parse(c.BaseURL)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("base url %s is not an http or https url such as http://127.0.0.1:8080", strconv.Quote(c.BaseURL))
	}
	base.RawQuery, base.Fragment = "", ""
	if !strings.HasSuffix(base.Path, "/") {
		base.Path += "/"
	}
	s := &settings{base: base.String(), timeout: c.Timeout, batchSize: c.BatchSize, refillBelow: c.RefillBelow}
	if s.timeout < 0 {
		return nil, fmt.Errorf("timeout %s must be positive", s.timeout)
	}
	if s.timeout == 0 {
		s.timeout = DefaultTimeout
	}
	if s.batchSize == 0 {
		s.batchSize = DefaultBatchSize
	}
	if s.batchSize < 1 || s.batchSize > MaxCount {
		return nil, fmt.Errorf("batch size %d is out of range 1..=%d", s.batchSize, MaxCount)
	}
	if s.refillBelow < 0 || s.refillBelow > s.batchSize {
		return nil, fmt.Errorf("refill threshold %d is out of range 0..=%d (the batch size)", s.refillBelow, s.batchSize)
	}
	if s.refillBelow == 0 {
		s.refillBelow = s.batchSize / 4
	}
	s.httpClient = c.HTTPClient
	if c.CAFile != "" || c.CertFile != "" || c.KeyFile != "" {
		if c.HTTPClient != nil {
			return nil, errors.New("give CAFile, CertFile and KeyFile, or an HTTPClient, not both")
		}
		config, err := c.tlsConfig()
		if err != nil {
			return nil, err
		}
		transport := http.DefaultTransport.(*http.Transport).Clone()
		transport.TLSClientConfig = config
		s.httpClient = &http.Client{Transport: transport}
	}
	if s.httpClient == nil {
		s.httpClient = http.DefaultClient
	}
	c.set = s
	return s, nil
}

// fetch gets count ids: GET /v1/id for one, /v1/ids?count= for more.
func (c *Client) fetch(ctx context.Context, s *settings, count int) ([]uint64, error) {
	ref := "v1/ids?count=" + strconv.Itoa(count)
	if count == 1 {
		ref = "v1/id"
	}
	u := s.base + ref
	reqCtx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(reqCtx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	req.Header.Set("Accept", "application/json")
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := s.httpClient.Do(req)
	if err == nil {
		defer resp.Body.Close()
		var body []byte
		body, err = io.ReadAll(io.LimitReader(resp.Body, maxBody))
		if err == nil {
			return parseIDs(u, resp.StatusCode, body, count)
		}
	}
	switch {
	case ctx.Err() != nil:
		return nil, &ConnectionError{URL: u, Err: ctx.Err(), msg: fmt.Sprintf("GET %s: %v", u, ctx.Err())}
	case errors.Is(reqCtx.Err(), context.DeadlineExceeded):
		return nil, &ConnectionError{URL: u, Err: reqCtx.Err(),
			msg: fmt.Sprintf("GET %s timed out after %d ms: %v", u, s.timeout.Milliseconds(), reqCtx.Err())}
	}
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err
	}
	if untrusted(err) {
		return nil, &ConnectionError{URL: u, Err: err,
			msg: fmt.Sprintf("GET %s failed: the server's certificate is not trusted: %v", u, err)}
	}
	return nil, &ConnectionError{URL: u, Err: err, msg: fmt.Sprintf("GET %s failed: %v", u, err)}
}

// untrusted says whether err is the server's certificate failing the client's checks: no
// CA the client trusts signed it, it names another host, or it is invalid (expired).
func untrusted(err error) bool {
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	return errors.As(err, &unknown) || errors.As(err, &host) || errors.As(err, &invalid)
}

// tlsConfig reads CAFile, CertFile and KeyFile.
func (c *Client) tlsConfig() (*tls.Config, error) {
	config := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("CAFile %s: cannot read it: %w", strconv.Quote(c.CAFile), pathless(err))
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CAFile %s: holds no PEM certificate", strconv.Quote(c.CAFile))
		}
		config.RootCAs = pool
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		return nil, errors.New("CertFile and KeyFile go together: give both or neither")
	}
	if c.CertFile != "" {
		pair, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("CertFile %s with KeyFile %s: %w", strconv.Quote(c.CertFile), strconv.Quote(c.KeyFile), pathless(err))
		}
		config.Certificates = []tls.Certificate{pair}
	}
	return config, nil
}

// pathless is a file error without the path the message names already.
func pathless(err error) error {
	var perr *fs.PathError
	if errors.As(err, &perr) {
		return perr.Err
	}
	return err
}

func parseIDs(u string, status int, body []byte, count int) ([]uint64, error) {
	if status != http.StatusOK {
		return nil, &ServerError{URL: u, Status: status, Message: errorText(body)}
	}
	var got struct {
		ID  string   `json:"id"`
		IDs []string `json:"ids"`
	}
	var texts []string
	if json.Unmarshal(body, &got) == nil {
		texts = got.IDs
		if count == 1 && got.ID != "" {
			texts = []string{got.ID}
		}
	}
	ids := make([]uint64, 0, len(texts))
	for _, t := range texts {
		n, err := strconv.ParseUint(t, 10, 64)
		if err != nil {
			break
		}
		ids = append(ids, n)
	}
	if len(texts) == 0 || len(ids) != len(texts) {
		shape := `{"ids":["<decimal>",...]}`
		if count == 1 {
			shape = `{"id":"<decimal>"}`
		}
		return nil, fmt.Errorf("GET %s answered 200 with a body that holds no %s: %s", u, shape, start(body))
	}
	if len(ids) != count {
		return nil, fmt.Errorf("GET %s answered %d ids, not the %d it asked for", u, len(ids), count)
	}
	return ids, nil
}

// errorText is the server's {"error": "..."} text, or the start of a body that has none.
func errorText(body []byte) string {
	var e struct {
		Error *string `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error != nil {
		return *e.Error
	}
	if len(body) == 0 {
		return "(empty body)"
	}
	return start(body)
}

// start is enough of a body to recognise it in a message.
func start(body []byte) string {
	const limit = 200
	if len(body) <= limit {
		return string(body)
	}
	return string(body[:limit]) + "..."
}
