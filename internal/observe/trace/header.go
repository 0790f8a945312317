package trace

import (
	"context"
	"strings"
)

// Sampling decisions a trace header carries.
const (
	sampledUnknown = iota
	sampledYes
	sampledNo
)

// header is an X-Ray trace header: "Root=1-…-…;Parent=…;Sampled=1".
type header struct {
	root, parent string
	sampled      int
}

// parseHeader reads an X-Amzn-Trace-Id / AWSTraceHeader value; a value
// without a well-formed Root is the zero header.
func parseHeader(s string) header {
	var h header
	for _, part := range strings.Split(strings.TrimSpace(s), ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			continue
		}
		switch k {
		case "Root":
			if validTraceID(v) {
				h.root = v
			}
		case "Parent":
			if validSpanID(v) {
				h.parent = v
			}
		case "Sampled":
			switch v {
			case "1":
				h.sampled = sampledYes
			case "0":
				h.sampled = sampledNo
			}
		}
	}
	if h.root == "" {
		return header{}
	}
	return h
}

func (h header) String() string {
	var b strings.Builder
	b.WriteString("Root=" + h.root)
	if h.parent != "" {
		b.WriteString(";Parent=" + h.parent)
	}
	switch h.sampled {
	case sampledYes:
		b.WriteString(";Sampled=1")
	case sampledNo:
		b.WriteString(";Sampled=0")
	}
	return b.String()
}

// validTraceID checks "1-<8 hex epoch>-<24 hex>".
func validTraceID(s string) bool {
	return len(s) == 35 && s[0] == '1' && s[1] == '-' && s[10] == '-' && isHex(s[2:10]) && isHex(s[11:])
}

// validSpanID checks 16 hex digits.
func validSpanID(s string) bool { return len(s) == 16 && isHex(s) }

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return s != ""
}

// TraceID returns the trace id ("1-…-…") of a trace header, or "".
func TraceID(h string) string { return parseHeader(h).root }

// Traceparent is the W3C trace context of the work ctx belongs to, in the
// same trace as X-Ray's (an X-Ray trace id is a W3C trace id written
// differently): "00-<trace>-<span>-<flags>". "" when ctx is not traced.
// Subscribers that speak W3C trace context join the platform's trace.
func Traceparent(ctx context.Context) string {
	h := parseHeader(Header(ctx))
	if h.root == "" || h.parent == "" {
		return ""
	}
	flags := "00"
	if h.sampled == sampledYes {
		flags = "01"
	}
	return "00-" + strings.ToLower(h.root[2:10]+h.root[11:]) + "-" + strings.ToLower(h.parent) + "-" + flags
}
