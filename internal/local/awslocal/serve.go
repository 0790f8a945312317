package awslocal

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
)

// serve starts h on addr ("" = a random loopback port). httptest is used
// even outside tests because it is exactly "an http.Server on a listener
// with a URL and a blocking Close"; addr lets `make dev` pin ports.
func serve(h http.Handler, addr string) (*httptest.Server, error) {
	srv := httptest.NewUnstartedServer(h)
	if addr != "" {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("awslocal: listen %s: %w", addr, err)
		}
		_ = srv.Listener.Close()
		srv.Listener = l
	}
	srv.Start()
	return srv, nil
}
