package snowmint

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tlsServer is the running `snowmint serve --datacenter 1 --worker 7` over mutual TLS the
// tests ask, the PEM file of the CA that signs its certificate, and a client certificate and
// key it takes.
func tlsServer(t *testing.T) (u, ca, cert, key string) {
	t.Helper()
	u, ca = os.Getenv("SNOWMINT_TLS_URL"), os.Getenv("SNOWMINT_CA")
	cert, key = os.Getenv("SNOWMINT_CLIENT_CERT"), os.Getenv("SNOWMINT_CLIENT_KEY")
	if u == "" || ca == "" || cert == "" || key == "" {
		t.Fatal("SNOWMINT_TLS_URL, SNOWMINT_CA, SNOWMINT_CLIENT_CERT or SNOWMINT_CLIENT_KEY is not set: run test.sh, or start `snowmint serve --tls-cert ... --tls-key ... --tls-client-ca ...` and set them")
	}
	return u, ca, cert, key
}

func TestIDsComeOverHTTPSFromAServerTheCAFileVouchesFor(t *testing.T) {
	u, ca, cert, key := tlsServer(t)
	c := &Client{BaseURL: u, CAFile: ca, CertFile: cert, KeyFile: key, BatchSize: 10}
	first, err := c.NextID(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rest, err := c.NextIDs(context.Background(), 20)
	if err != nil {
		t.Fatal(err)
	}
	fromTheServer(t, append([]uint64{first}, rest...))
}

func TestWithoutTheCAFileTheServersCertificateIsNotTrusted(t *testing.T) {
	u, _, _, _ := tlsServer(t)
	_, err := (&Client{BaseURL: u}).NextID(context.Background())
	want := "GET " + u + "/v1/ids?count=100 failed: the server's certificate is not trusted: "
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("error %v, want it to start with %q", err, want)
	}
	var cerr *ConnectionError
	if !errors.As(err, &cerr) || !untrusted(cerr.Err) {
		t.Errorf("a *ConnectionError with the certificate's error: %#v", err)
	}
}

func TestWithoutAClientCertificateTheServerRefuses(t *testing.T) {
	u, ca, _, _ := tlsServer(t)
	_, err := (&Client{BaseURL: u, CAFile: ca}).NextID(context.Background())
	var cerr *ConnectionError
	if !errors.As(err, &cerr) || !strings.HasPrefix(err.Error(), "GET "+u+"/v1/ids?count=100 failed: ") {
		t.Fatalf("error %v, want a *ConnectionError", err)
	}
}

func TestBadTLSSettingsAreRefusedNamingTheFile(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty.pem")
	if err := os.WriteFile(empty, []byte("nothing here\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const u = "https://localhost:8443"
	ctx := context.Background()
	for _, c := range []struct {
		client *Client
		want   string
	}{
		{&Client{BaseURL: u, CAFile: "/nonexistent/ca.pem"}, `CAFile "/nonexistent/ca.pem": cannot read it: no such file or directory`},
		{&Client{BaseURL: u, CAFile: empty}, `CAFile "` + empty + `": holds no PEM certificate`},
		{&Client{BaseURL: u, CertFile: "/etc/client.pem"}, "CertFile and KeyFile go together: give both or neither"},
		{&Client{BaseURL: u, CertFile: empty, KeyFile: empty}, `CertFile "` + empty + `" with KeyFile "` + empty + `": tls: failed to find any PEM data in certificate input`},
		{&Client{BaseURL: u, CAFile: empty, HTTPClient: &http.Client{}}, "give CAFile, CertFile and KeyFile, or an HTTPClient, not both"},
	} {
		_, err := c.client.NextID(ctx)
		errorIs(t, err, c.want)
	}
}
