package afterward

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/aws/aws-lambda-go/lambda"
)

// ExtensionName is the internal extension's name in the Extensions API.
const ExtensionName = "evp-afterward"

// Extension is the internal Lambda extension that holds the execution
// environment after each answer until the invocation's work is done.
type Extension struct {
	endpoint string
	id       string
	client   *http.Client
	// handed carries each invocation's tasks from Handler (once its
	// handler returned) to the extension's loop, in invocation order.
	handed chan *Tasks
	alive  atomic.Bool
}

// Register registers the extension with the Extensions API at
// runtimeAPI (AWS_LAMBDA_RUNTIME_API) and starts its loop. It must run
// during init, before lambda.Start asks for the first event: Lambda
// refuses registrations after that.
func Register(runtimeAPI string) (*Extension, error) {
	if runtimeAPI == "" {
		return nil, errors.New("afterward: no Runtime API address (AWS_LAMBDA_RUNTIME_API)")
	}
	e := &Extension{
		endpoint: "http://" + runtimeAPI + "/2020-01-01/extension/",
		// The Runtime API is link-local: never through a proxy, never
		// timed out (event/next blocks until the next invocation).
		client: &http.Client{Transport: &http.Transport{Proxy: nil}},
		handed: make(chan *Tasks, 1),
	}
	body := strings.NewReader(`{"events":["INVOKE"]}`)
	req, err := http.NewRequest(http.MethodPost, e.endpoint+"register", body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Lambda-Extension-Name", ExtensionName)
	res, err := e.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("afterward: register the extension: %w", err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("afterward: register the extension: %s", res.Status)
	}
	if e.id = res.Header.Get("Lambda-Extension-Identifier"); e.id == "" {
		return nil, errors.New("afterward: register the extension: no identifier")
	}
	e.alive.Store(true)
	go e.loop()
	return e, nil
}

// loop asks for the next event; on each invocation it waits for the
// invocation's tasks (handed over when its handler returned) to finish
// before asking again, which is what keeps the environment thawed.
func (e *Extension) loop() {
	defer e.alive.Store(false)
	for {
		kind, err := e.next()
		if err != nil || kind != "INVOKE" {
			return
		}
		(<-e.handed).Wait()
	}
}

func (e *Extension) next() (string, error) {
	req, err := http.NewRequest(http.MethodGet, e.endpoint+"event/next", nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Lambda-Extension-Identifier", e.id)
	res, err := e.client.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return "", fmt.Errorf("afterward: next event: %s", res.Status)
	}
	var ev struct {
		EventType string `json:"eventType"`
	}
	if err := json.NewDecoder(res.Body).Decode(&ev); err != nil {
		return "", err
	}
	return ev.EventType, nil
}

// Handler wraps h so each invocation's context carries its Tasks (Go),
// which finish after the answer while ext holds the environment; with no
// extension (nil, or its loop ended) the invocation waits for them before
// it answers.
func Handler(h lambda.Handler, ext *Extension) lambda.Handler {
	return handler{h: h, ext: ext}
}

type handler struct {
	h   lambda.Handler
	ext *Extension
}

func (w handler) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	t := New()
	defer func() {
		if w.ext != nil && w.ext.alive.Load() {
			select {
			case w.ext.handed <- t:
				return
			default: // the loop is not taking them: nobody else waits
			}
		}
		t.Wait()
	}()
	return w.h.Invoke(With(ctx, t), payload)
}
