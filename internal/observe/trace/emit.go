package trace

import (
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// maxPacket is the largest document the daemon takes in one UDP packet.
const maxPacket = 62 << 10

// emitter sends documents to the daemon over UDP, as the X-Ray SDKs and the
// OpenTelemetry X-Ray exporter do. A send never blocks a request: a lost
// packet is a gap in a trace, counted, never an error.
type emitter struct {
	mu   sync.Mutex
	addr string
	conn net.Conn
}

var (
	out     atomic.Pointer[emitter]
	dropped atomic.Int64
)

// Dropped is how many documents could not be sent (daemon unreachable,
// or a document too large even on its own).
func Dropped() int64 { return dropped.Load() }

func (e *emitter) write(p []byte) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.conn == nil {
		c, err := net.Dial("udp", e.addr)
		if err != nil {
			dropped.Add(1)
			return
		}
		e.conn = c
	}
	if _, err := e.conn.Write(p); err != nil {
		dropped.Add(1)
	}
}

// send emits s as one document; a document too large for a packet goes
// as the span alone plus each subsegment as an independent subsegment.
func send(s *span) {
	e := out.Load()
	if e == nil {
		return
	}
	d := s.doc(true)
	p, err := marshal(d)
	if err != nil {
		dropped.Add(1)
		return
	}
	if len(p) <= maxPacket {
		e.write(p)
		return
	}
	children := d.Subsegments
	d.Subsegments = nil
	sendDoc(e, d)
	for _, c := range children {
		c.TraceID, c.ParentID, c.Type = d.TraceID, d.ID, "subsegment"
		sendDoc(e, c)
	}
}

func sendDoc(e *emitter, d document) {
	p, err := marshal(d)
	if err != nil || len(p) > maxPacket {
		dropped.Add(1)
		return
	}
	e.write(p)
}

// sampler decides for a new trace: X-Ray's default rule, one trace per
// second and 5% of the rest (the account's centralized rules apply where
// Lambda starts the trace, which is nearly everywhere).
type sampler struct {
	all    bool
	mu     sync.Mutex
	second int64
	used   bool
}

var sampling atomic.Pointer[sampler]

func (s *sampler) sample() bool {
	if s == nil {
		return false
	}
	if s.all {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if sec := time.Now().Unix(); sec != s.second {
		s.second, s.used = sec, false
	}
	if !s.used {
		s.used = true
		return true
	}
	return rand.Float64() < 0.05
}
