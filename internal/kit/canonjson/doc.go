// Package canonjson owns the platform's reading of JSON text beyond what
// encoding/json checks: strictness (one value, valid UTF-8, no duplicate
// object member names at any depth, a nesting limit), a canonical form for
// content hashes (sorted members, normalised numbers and string escapes, no
// whitespace: two texts that every JSON parser reads as the same value have
// the same canonical form), and a rewrite that \u-escapes the characters a
// transport refuses inside strings while keeping the value unchanged.
//
// Ambiguous documents are refused rather than guessed about: parsers differ
// on which of two duplicate members wins, so an envelope with one could be
// read as one event by the platform and as another by a subscriber.
package canonjson
