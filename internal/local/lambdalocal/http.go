package lambdalocal

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"

	"github.com/siteswarm/eventplatform/internal/local/awslocal"
)

// MaxHTTPBody is API Gateway's 10 MB payload limit.
const MaxHTTPBody = 10 << 20

// wildcard matches a path parameter: ServeMux's {name} and {name...}, and
// API Gateway's greedy {name+}.
var wildcard = regexp.MustCompile(`\{([A-Za-z0-9_]+)(?:\.\.\.|\+)?\}`)

// HTTPHandler converts requests to API Gateway HTTP API (payload format 2.0)
// events, invokes the function and converts its response back, as API
// Gateway does.
func (s *Triggers) HTTPHandler(name string, route HTTPRoute) http.Handler {
	params := wildcard.FindAllStringSubmatch(route.Path, -1)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, MaxHTTPBody+1))
		if err != nil {
			writeGatewayError(w, http.StatusBadRequest, "Bad Request")
			return
		}
		if len(body) > MaxHTTPBody {
			writeGatewayError(w, http.StatusRequestEntityTooLarge, "Request Entity Too Large")
			return
		}
		ev := GatewayEvent(r, route, body)
		if len(params) > 0 {
			ev.PathParameters = map[string]string{}
			for _, p := range params {
				ev.PathParameters[p[1]] = r.PathValue(p[1])
			}
		}
		payload, err := json.Marshal(ev)
		if err != nil {
			writeGatewayError(w, http.StatusInternalServerError, "Internal Server Error")
			return
		}
		out, err := s.Functions.Invoke(r.Context(), name, payload)
		if err != nil {
			s.log().ErrorContext(r.Context(), "lambdalocal: function failed behind an HTTP route", "function", name, "route", ev.RouteKey, "error", err)
			writeGatewayError(w, http.StatusInternalServerError, "Internal Server Error")
			return
		}
		writeGatewayResponse(w, out)
	})
}

// GatewayEvent is the API Gateway HTTP API (payload format 2.0) event of a
// request on route.
func GatewayEvent(r *http.Request, route HTTPRoute, body []byte) events.APIGatewayV2HTTPRequest {
	now := time.Now().UTC()
	headers := map[string]string{}
	var cookies []string
	for k, vs := range r.Header {
		if strings.EqualFold(k, "Cookie") {
			for _, v := range vs {
				for _, c := range strings.Split(v, ";") {
					if c = strings.TrimSpace(c); c != "" {
						cookies = append(cookies, c)
					}
				}
			}
			continue
		}
		headers[strings.ToLower(k)] = strings.Join(vs, ",")
	}
	headers["host"] = r.Host
	var query map[string]string
	if q := r.URL.Query(); len(q) > 0 {
		query = map[string]string{}
		for k, vs := range q {
			query[k] = strings.Join(vs, ",")
		}
	}
	ip, _, _ := net.SplitHostPort(r.RemoteAddr)
	method := strings.ToUpper(route.Method)
	if method == "" {
		method = "ANY"
	}
	routeKey := method + " " + route.Path
	ev := events.APIGatewayV2HTTPRequest{
		Version:               "2.0",
		RouteKey:              routeKey,
		RawPath:               r.URL.EscapedPath(),
		RawQueryString:        r.URL.RawQuery,
		Cookies:               cookies,
		Headers:               headers,
		QueryStringParameters: query,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey:     routeKey,
			AccountID:    awslocal.AccountID,
			Stage:        "$default",
			RequestID:    uuid.NewString(),
			APIID:        "local",
			DomainName:   r.Host,
			DomainPrefix: "local",
			Time:         now.Format("02/Jan/2006:15:04:05 -0700"),
			TimeEpoch:    now.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method:    r.Method,
				Path:      r.URL.Path,
				Protocol:  r.Proto,
				SourceIP:  ip,
				UserAgent: r.UserAgent(),
			},
		},
	}
	// API Gateway passes text bodies as is and base64-encodes anything
	// else; handlers must cope with both.
	if len(body) > 0 {
		if utf8.Valid(body) && r.Header.Get("Content-Encoding") == "" {
			ev.Body = string(body)
		} else {
			ev.Body = base64.StdEncoding.EncodeToString(body)
			ev.IsBase64Encoded = true
		}
	}
	return ev
}

// writeGatewayResponse maps a function result to HTTP the way payload
// format 2.0 does: a structured response with statusCode, or any other JSON
// value as a 200 application/json body.
func writeGatewayResponse(w http.ResponseWriter, out []byte) {
	var probe map[string]json.RawMessage
	if json.Unmarshal(out, &probe) != nil || probe["statusCode"] == nil {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out)
		return
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		writeGatewayError(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	for k, v := range resp.Headers {
		w.Header().Set(k, v)
	}
	for k, vs := range resp.MultiValueHeaders {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	for _, c := range resp.Cookies {
		w.Header().Add("Set-Cookie", c)
	}
	body := []byte(resp.Body)
	if resp.IsBase64Encoded {
		dec, err := base64.StdEncoding.DecodeString(resp.Body)
		if err != nil {
			writeGatewayError(w, http.StatusInternalServerError, "Internal Server Error")
			return
		}
		body = dec
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(body)
}

func writeGatewayError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"message": msg})
}
