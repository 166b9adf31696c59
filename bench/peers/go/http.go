package main

// go_peers http PORT: the load phase's Go peer (bench/load_suite.py): net/http on 127.0.0.1:PORT,
// every request answered with examples/httpd.c's body, "Hello, world\n" (net/http adds its Date
// and Content-Type headers), keep-alive as net/http does by default, until killed.  GOMAXPROCS
// sets the Ps.

import (
	"net"
	"net/http"
	"strconv"
)

var helloBody = []byte("Hello, world\n")

func httpServe(args []string) {
	if len(args) != 1 {
		usageExit()
	}
	port, err := strconv.Atoi(args[0])
	if err != nil || port < 0 || port > 65535 {
		usageExit()
	}
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		die("http: %v", err)
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "13")
		w.Write(helloBody)
	})
	die("http: %v", http.Serve(ln, h))
}
