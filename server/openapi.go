package server

import (
	_ "embed"
	"net/http"
)

// openAPIDoc is the OpenAPI 3.1 document of the API; openapi_test.go holds
// it to the routes and to what they answer.
//
//go:embed openapi.json
var openAPIDoc []byte

func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openAPIDoc)
}
