package main

import (
	"fmt"
	"net/http"
	"os"

	"github.com/gorilla/websocket"
)

// runEcho is the baseline server: gorilla/websocket with the same buffer
// sizes as the web adapter, one goroutine per connection echoing every
// frame back unchanged. No JSON, no store, no brain: the floor that the
// gateway's figures are compared with. It serves until killed.
func runEcho(addr string) error {
	up := websocket.Upgrader{
		ReadBufferSize:  4096,
		WriteBufferSize: 4096,
		CheckOrigin:     func(*http.Request) bool { return true },
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /ws", func(w http.ResponseWriter, r *http.Request) {
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		go func() {
			defer ws.Close()
			for {
				kind, data, err := ws.ReadMessage()
				if err != nil {
					return
				}
				if err := ws.WriteMessage(kind, data); err != nil {
					return
				}
			}
		}()
	})
	return http.ListenAndServe(addr, mux)
}

// echoRole runs the echo server when this process was started as one
// (startEcho sets the variables) and reports whether it did.
func echoRole() bool {
	if os.Getenv(roleEnv) != "echo" {
		return false
	}
	if err := runEcho(os.Getenv(listenEnv)); err != nil {
		fmt.Fprintln(os.Stderr, "echo:", err)
		os.Exit(1)
	}
	os.Exit(0)
	return true
}
