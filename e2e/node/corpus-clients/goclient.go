// goclient URL — the corpus's Go net/http client (built at test time, CGO_ENABLED=0: Go's own resolver
// and TLS stack): GET URL, print the body; exit 1 with the error on any failure. The test CA comes
// from SSL_CERT_FILE, which Go reads on Linux.
package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

func main() {
	c := &http.Client{Timeout: 20 * time.Second}
	r, err := c.Get(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "goclient:", err)
		os.Exit(1)
	}
	defer r.Body.Close()
	b, err := io.ReadAll(r.Body)
	if err != nil || r.StatusCode != 200 {
		fmt.Fprintln(os.Stderr, "goclient:", r.Status, err)
		os.Exit(1)
	}
	os.Stdout.Write(b)
}
