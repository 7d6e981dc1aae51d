package record_test

import (
	"bytes"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentrt/agentrt/model/record"
)

// Record an exchange with a provider, then replay it with the provider gone.
func Example() {
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"text\":\"Hel\"}\n\n")
		w.(http.Flusher).Flush()
		io.WriteString(w, "data: {\"text\":\"lo\"}\n\n")
	}))
	dir, err := os.MkdirTemp("", "record-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "testdata", "hello.record")

	chat := func(c *http.Client) string {
		req, err := http.NewRequest("POST", provider.URL+"/v1/chat", strings.NewReader(`{"prompt":"hi"}`))
		if err != nil {
			log.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer sk-secret")
		resp, err := c.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			log.Fatal(err)
		}
		return resp.Status + " " + resp.Header.Get("Content-Type") + "\n" + string(body)
	}

	// Record: the request goes to the provider, the exchange to the file.
	rec, err := record.Open(path, record.Record, nil)
	if err != nil {
		log.Fatal(err)
	}
	chat(rec.Client())
	if err := rec.Close(); err != nil {
		log.Fatal(err)
	}
	provider.Close()

	// Replay: the file answers.
	rep, err := record.Open(path, record.Replay, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer rep.Close()
	fmt.Print(chat(rep.Client()))

	data, err := os.ReadFile(path)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("key in file:", bytes.Contains(data, []byte("sk-secret")))
	fmt.Println("unused:", rep.Unused())
	// Output:
	// 200 OK text/event-stream
	// data: {"text":"Hel"}
	//
	// data: {"text":"lo"}
	//
	// key in file: false
	// unused: []
}
