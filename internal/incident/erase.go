package incident

import "slices"

// ErasedText replaces the error text and the history notes of an incident
// whose subject was erased: a subscriber's answer quoted there ("422 …
// contact ann@example.com already exists") is the subject's data as much
// as the payload.
const ErasedText = "(erased)"

// ErasedSHA256 stands for the body digest of an erased incident (its body
// is the erasure's marker): a write that must not follow the erasure
// checks for it (a replay restoring an expired event from the incident).
const ErasedSHA256 = "erased"

// Erased is inc with everything that may hold a subject's data replaced:
// the body by marker (inline; its stored objects are the caller's to
// delete first), the error message and detail and every history note by
// ErasedText. Codes, statuses, actors, times and counts stay: they say
// what happened, not about whom.
func (inc Incident) Erased(marker []byte) Incident {
	inc.Body = Body{Inline: slices.Clone(marker), Size: len(marker), SHA256: ErasedSHA256}
	inc.ErrorMessage = ErasedText
	if inc.ErrorSummary != "" {
		inc.ErrorSummary = ErasedText
	}
	if inc.ErrorDetail != "" {
		inc.ErrorDetail = ErasedText
	}
	inc.History = slices.Clone(inc.History)
	for i := range inc.History {
		if inc.History[i].Note != "" {
			inc.History[i].Note = ErasedText
		}
	}
	return inc
}

// IsErased reports whether inc is Erased(marker) already.
func (inc Incident) IsErased(marker []byte) bool {
	if inc.Body.Key != "" || inc.Body.PayloadKey != "" || string(inc.Body.Inline) != string(marker) {
		return false
	}
	if inc.ErrorMessage != ErasedText || inc.ErrorDetail != "" && inc.ErrorDetail != ErasedText || inc.ErrorSummary != "" && inc.ErrorSummary != ErasedText {
		return false
	}
	for _, c := range inc.History {
		if c.Note != "" && c.Note != ErasedText {
			return false
		}
	}
	return true
}
