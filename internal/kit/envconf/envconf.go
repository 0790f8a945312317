package envconf

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Reader reads variables through Lookup (os.LookupEnv by default) and
// remembers every parse error.
type Reader struct {
	Lookup func(string) (string, bool)
	errs   []error
}

// New reads the process environment.
func New() *Reader { return &Reader{Lookup: os.LookupEnv} }

// FromMap reads a fixed map (tests, the local stack).
func FromMap(m map[string]string) *Reader {
	return &Reader{Lookup: func(k string) (string, bool) { v, ok := m[k]; return v, ok }}
}

func (r *Reader) get(key string) (string, bool) {
	v, ok := r.Lookup(key)
	v = strings.TrimSpace(v)
	return v, ok && v != ""
}

// String returns the variable or def.
func (r *Reader) String(key, def string) string {
	if v, ok := r.get(key); ok {
		return v
	}
	return def
}

// Int returns the variable parsed as an integer, or def.
func (r *Reader) Int(key string, def int) int {
	v, ok := r.get(key)
	if !ok {
		return def
	}
	i, err := strconv.Atoi(v)
	if err != nil {
		r.errs = append(r.errs, fmt.Errorf("%s=%q: not an integer", key, v))
		return def
	}
	return i
}

// Duration returns the variable parsed by time.ParseDuration, or def.
func (r *Reader) Duration(key string, def time.Duration) time.Duration {
	v, ok := r.get(key)
	if !ok {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		r.errs = append(r.errs, fmt.Errorf("%s=%q: not a duration (e.g. 30s, 2m)", key, v))
		return def
	}
	return d
}

// Bool returns the variable parsed by strconv.ParseBool, or def.
func (r *Reader) Bool(key string, def bool) bool {
	v, ok := r.get(key)
	if !ok {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		r.errs = append(r.errs, fmt.Errorf("%s=%q: not a boolean", key, v))
		return def
	}
	return b
}

// JSON decodes the variable into dst (left alone when unset).
func (r *Reader) JSON(key string, dst any) {
	v, ok := r.get(key)
	if !ok {
		return
	}
	if err := json.Unmarshal([]byte(v), dst); err != nil {
		r.errs = append(r.errs, fmt.Errorf("%s: invalid JSON: %v", key, err))
	}
}

// List splits a comma-separated variable, dropping empty items.
func (r *Reader) List(key string) []string {
	v, ok := r.get(key)
	if !ok {
		return nil
	}
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Fail records a problem found while reading (a missing or inconsistent
// variable), reported by Err with the parse errors.
func (r *Reader) Fail(err error) { r.errs = append(r.errs, err) }

// Err returns every parse error seen so far.
func (r *Reader) Err() error { return errors.Join(r.errs...) }
