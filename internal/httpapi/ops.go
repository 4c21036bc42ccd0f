package httpapi

import (
	_ "embed"
	"net/http"

	"github.com/feedd/feedd/internal/feed"
)

// openAPIDoc is written by hand, next to routes.go; TestOpenAPIMatchesRoutes
// keeps the two in step.
//
//go:embed openapi.json
var openAPIDoc []byte

func handleOpenAPI() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentTypeJSON)
		_, _ = w.Write(openAPIDoc)
	})
}

type statusJSON struct {
	Status string `json:"status"`
}

// handleHealth answers while the process can serve at all: a liveness probe
// must not fail because a backend did, or every replica restarts at once.
func handleHealth() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		encode(w, http.StatusOK, statusJSON{Status: "ok"})
	})
}

func handleMetrics(metrics http.Handler) http.Handler {
	if metrics != nil {
		return metrics
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, feed.ENOTFOUND, "this process serves no metrics")
	})
}
